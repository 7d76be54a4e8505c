import ChannelAPI
import Foundation
import NtfyChannel
import RouterTesting
import Testing

/// The ntfy example tested the way a channel author tests a module: over the in-process
/// `ScriptedTransport` (no sockets, no Python), with the factory building the channel from its config.
@Suite struct NtfyChannelUnitTests {
    static func make(_ http: ScriptedTransport, logs: RecordingLogSink = RecordingLogSink()) throws -> any Channel {
        let config = try TestConfig.channel("server: https://ntfy.example/\ntoken: tk_unit_secret", name: "ntfy")
        let clock = ManualClock()
        let channel = try NtfyChannel.factory.make(
            config,
            ChannelContext(
                name: "ntfy", http: http, clock: clock, random: FixedRandom(),
                logger: ChannelLogger(source: "ntfy", sink: logs, clock: clock), state: InMemoryChannelState()))
        try config.finish()
        return channel
    }

    static func target(_ id: String, topic: String?) -> DeliveryTarget {
        DeliveryTarget(
            device: Device(
                deviceId: id, platform: "ntfy", fields: topic.map { ["topic": .string($0)] } ?? [:]),
            deliveryId: "del-\(id)")
    }

    @Test func publishesOneJSONMessagePerDeviceAndClassifiesTheAnswers() async throws {
        let http = ScriptedTransport { request in
            let topic = (try? JSONValue.parse(request.body))?["topic"]?.stringValue
            switch topic {
            case "ok": return .success(HTTPResponse(status: 200, body: Array(#"{"id":"x"}"#.utf8)))
            case "busy": return .success(HTTPResponse(status: 429))
            default: return .success(HTTPResponse(status: 403))
            }
        }
        let logs = RecordingLogSink()
        let channel = try Self.make(http, logs: logs)
        let targets = [
            Self.target("a", topic: "ok"), Self.target("b", topic: "busy"), Self.target("c", topic: "denied"),
            Self.target("d", topic: nil),
        ]
        let results = await channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(title: "Disk", body: "94%", priority: .high), targets: targets))
        #expect(results.map(\.deliveryId) == ["del-a", "del-b", "del-c", "del-d"])
        #expect(results.map(\.outcome) == [.delivered, .retry, .failed, .failed])
        #expect(results[3].reason == "device has no topic")
        let sent = http.requests
        #expect(sent.count == 3)
        let first = try #require(sent.first)
        #expect(first.method == "POST")
        #expect(first.url == "https://ntfy.example/")
        #expect(first.headers.contains(HTTPHeader("authorization", "Bearer tk_unit_secret")))
        let body = try JSONValue.parse(first.body)
        #expect(body["title"] == "Disk")
        #expect(body["message"] == "94%")
        #expect(body["priority"] == 5)
        #expect(logs.text.contains("ntfy refused the access token"))
        #expect(!logs.text.contains("tk_unit_secret"))
    }

    /// The unit-test example of docs/channels.md ("Unit tests: over `ScriptedTransport`"), as written there.
    @Test func theGuideExampleRuns() async throws {
        let http = ScriptedTransport()  // unrouted requests get 404
        http.route(
            "/", method: "POST",
            [  // a path prefix, on any host …
                .json(429, #"{"error":"slow down"}"#), .json(200, #"{"id":"1"}"#),  // … in order, the last repeats
            ])
        http.route("https://backup.example/", [.error(.connectFailed)])  // a URL prefix tells hosts apart
        let config = try TestConfig.channel("server: https://ntfy.example/\ntoken: tk_secret", name: "ntfy")
        let logs = RecordingLogSink()
        let context = ChannelContext(
            name: "ntfy", http: http, clock: ManualClock(), random: FixedRandom(),
            logger: ChannelLogger(source: "ntfy", sink: logs), state: InMemoryChannelState())
        let channel = try NtfyChannel.factory.make(config, context)
        try config.finish()
        let target = DeliveryTarget(
            device: Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"]), deliveryId: "d1")
        let request = DeliveryRequest(notification: HeraldNotification(title: "Disk full"), targets: [target])
        #expect(await channel.deliver(request).map(\.outcome) == [.retry])  // the 429
        #expect(await channel.deliver(request).map(\.outcome) == [.delivered])  // the 200
        let sent = try #require(http.requests.first)  // [HTTPRequest], in the order sent
        #expect(sent.method == "POST" && sent.path == "/")
        #expect(sent.header("authorization") == "Bearer tk_secret")
        let body = try JSONValue.parse(sent.body)  // compare JSON parsed, not bytes
        #expect(body["topic"] == "alerts" && body["title"] == "Disk full")
        #expect(!logs.text.contains("tk_secret"))
    }
}
