import ChannelAPI
import Foundation
import HeraldChannels
import HeraldHTTPTesting
import Router
import RouterTesting
import Testing

/// `Examples/exec/matrix.py` end to end: a YAML config with `type: exec`, the router, the Python
/// plugin and a loopback homeserver that records what it received.
@Suite(.stopsFakeHTTPServers) struct ExecMatrixExampleTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Examples/exec/matrix.py").path

    @Test func deliversThroughTheRouterWithTheDeliveryIdAsTxnId() async throws {
        let server = try await FakeHTTPServer.start(http2: false)
        // The first send fails with 500; the retry must reuse the same txnId.
        try await server.route(
            "/_matrix/client/v3/rooms/", method: "PUT",
            [
                .json(500, #"{"errcode":"M_UNKNOWN","error":"try later"}"#),
                .json(200, #"{"event_id":"$ev1"}"#),
            ])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-exec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let token = "syt_bot_secret_token_value"
        let yaml = """
            version: 1
            store: { path: \(dir.appendingPathComponent("herald.db").path) }
            channels:
              matrix:
                type: exec
                platforms: [matrix]
                command: [python3, "\(Self.example)"]
                retry: { attempts: 3, initial: 1s, max: 1s }
                config:
                  homeserver: "\(server.baseURL)"
                  access-token: \(token)
                  ca-file: "\(server.caFile)"
            routes:
              default:
                - deliver: [matrix]
            """
        let registry = HeraldChannels.registry
        let logs = RecordingLogSink()
        let clock = ManualClock()
        let router = try await Router(
            config: try ConfigLoader.parse(yaml, registry: registry), registry: registry,
            options: RouterOptions(clock: clock, logSink: logs))
        await #expect(throws: ValidationError(field: "room", "must be a room id like !abc:example.org")) {
            try await router.register(Device(deviceId: "ops", platform: "matrix", fields: ["room": "ops"]))
        }
        try await router.register(Device(deviceId: "ops", platform: "matrix", fields: ["room": "!ops:example.org"]))
        let report = try await router.send(HeraldNotification(title: "Disk full", body: "94% used"))
        let first = try #require(report.deliveries.first)
        #expect(first.state == .retry)
        #expect(first.reason == "500 M_UNKNOWN try later")
        let summary = try await router.drain(untilEmpty: true, timeout: .seconds(60))
        #expect(summary.remaining == 0)
        let stored = try #require(try router.history(id: report.id).first?.deliveries.first)
        #expect(stored.state == .delivered)
        #expect(stored.providerMessageId == "$ev1")
        let requests = try await server.requests()
        #expect(requests.count == 2)
        let path = "/_matrix/client/v3/rooms/%21ops%3Aexample.org/send/m.room.message/" + first.id
        for r in requests {
            #expect(r.method == "PUT")
            #expect(r.path == path)
            #expect(r.header("authorization") == "Bearer \(token)")
            let body = try JSONValue.parse(r.body)
            #expect(body == ["msgtype": "m.text", "body": "Disk full\n94% used"])
        }
        #expect(!logs.text.contains(token))
        await router.shutdown()
    }
}
