import ChannelAPI
import ChannelTesting
import Foundation
import HeraldChannels
import HeraldServer
import Router
import RouterTesting
import Testing

/// Issue 35: local push. A `local` channel delivers over the app's open stream
/// (`GET /v1/devices/{deviceId}/stream`) and waits for its `received`; the cloud (`fcm`, a recording
/// channel here) is the fallback of `mode: first`. Outcomes and their order are asserted, never an
/// elapsed time: the silent app's confirm window runs on a manual clock.
@Suite struct LocalPushTests {
    /// One delivery of a report.
    struct Outcome: Sendable {
        var outcome: String?
        var reason: String?
    }

    /// A served router: `local` then the recording `fcm` in one `mode: first` step.
    struct Rig {
        let router: Router
        let server: HeraldServer
        let fcm: RecordingChannel
        let home: String

        var port: Int { server.port }

        static func start(confirm: String = "25s", clock: (any HeraldClock)? = nil) async throws -> Rig {
            let fcm = RecordingChannel()
            var registry = try ChannelRegistry([fcm.factory(type: "rec-fcm", platforms: ["phone"])])
            try registry.register(try #require(HeraldChannels.registry.factory(for: "local")))
            for p in HeraldChannels.registry.platforms where registry.platform(p.name) == nil {
                try registry.register(platform: p)
            }
            let home = FileManager.default.temporaryDirectory.appendingPathComponent(
                "herald-local-\(UUID().uuidString)"
            )
            .path
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let config = try ConfigLoader.parse(
                """
                version: 1
                store: { path: \(home)/herald.db }
                channels:
                  local: { type: local, confirm: \(confirm) }
                  fcm: { type: rec-fcm }
                routes:
                  default:
                    - deliver: [local, fcm]
                      mode: first
                """, registry: registry)
            var options = RouterOptions(logSink: RecordingLogSink())
            if let clock { options.clock = clock }
            let router = try await Router(config: config, registry: registry, options: options)
            let server = try HeraldServer(router: router, server: ServerHarness.defaults)
            return Rig(router: router, server: server, fcm: fcm, home: home)
        }

        func stop() async {
            await server.stop(grace: .seconds(2))
            await router.shutdown()
            try? FileManager.default.removeItem(atPath: home)
        }

        func request(_ method: String, _ path: String, token: String? = ServerHarness.admin, json: String? = nil)
            async throws -> RawResponse
        {
            try await RawHTTP.request(port: port, method, path, token: token, json: json)
        }

        /// Registers phone `id` through the API and returns its stream path and secret.
        func register(_ id: String) async throws -> (path: String, secret: String) {
            let token = "tok-" + id.replacingOccurrences(of: " ", with: "-") + "-0123456789"
            let r = try await request(
                "POST", "/v1/devices", json: #"{"deviceId":"\#(id)","platform":"phone","token":"\#(token)"}"#)
            #expect(r.status == 200, "\(r.text)")
            let stream = try #require(r.json?["stream"] as? [String: Any], "\(r.text)")
            return (try #require(stream["path"] as? String), try #require(stream["secret"] as? String))
        }

        /// Sends notification `id` and returns its delivery report's outcomes by channel.
        func send(_ id: String) async throws -> [String: Outcome] {
            let r = try await request("POST", "/v1/notifications", json: #"{"id":"\#(id)","title":"hi"}"#)
            #expect(r.status == 200, "\(r.text)")
            let deliveries = try #require(r.json?["deliveries"] as? [[String: Any]], "\(r.text)")
            var byChannel: [String: Outcome] = [:]
            for d in deliveries {
                if let c = d["channel"] as? String {
                    byChannel[c] = Outcome(outcome: d["outcome"] as? String, reason: d["reason"] as? String)
                }
            }
            return byChannel
        }

        func confirm(_ id: String, device: String) async throws -> RawResponse {
            try await request(
                "POST", "/v1/notifications/\(id)/events", json: #"{"kind":"received","deviceId":"\#(device)"}"#)
        }
    }

    static func with(
        confirm: String = "25s", clock: (any HeraldClock)? = nil, _ body: (Rig) async throws -> Void
    ) async throws {
        let rig = try await Rig.start(confirm: confirm, clock: clock)
        do {
            try await body(rig)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// Opens the stream and reads its opening comment.
    static func open(_ rig: Rig, _ stream: (path: String, secret: String)) async throws -> SSEClient {
        let client = try await SSEClient.open(port: rig.port, path: stream.path, token: stream.secret)
        #expect(client.head.status == 200)
        _ = try await client.read(until: { $0.contains { $0.event == "comment" } })
        return client
    }

    static func payload(_ event: SSEClient.Event) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
    }

    @Test func connectedAndConfirmingIsDeliveredLocallyAndTheCloudSkipped() async throws {
        try await Self.with { rig in
            let stream = try await rig.register("p1")
            let app = try await Self.open(rig, stream)
            // The console's summary shows the device as connected.
            let summary = try await rig.request("GET", "/v1/summary")
            let connected = (summary.json?["connected"] as? [String: Any])?["default"] as? [[String: Any]]
            #expect(connected?.map { $0["deviceId"] as? String } == ["p1"], "\(summary.text)")
            let sending = Task { try await rig.send("n-1") }
            let events = try await app.read(until: { $0.contains { $0.event == "notification" } })
            let pushed = try Self.payload(try #require(events.first { $0.event == "notification" }))
            #expect(pushed["id"] as? String == "n-1")
            #expect((pushed["notification"] as? [String: Any])?["title"] as? String == "hi")
            #expect(
                (pushed["data"] as? [String: Any])?["heraldDeliveryId"] as? String == pushed["deliveryId"] as? String)
            let confirmed = try await rig.confirm("n-1", device: "p1")
            #expect(confirmed.status == 201, "\(confirmed.text)")
            let report = try await sending.value
            app.close()
            #expect(report["local"]?.outcome == "delivered")
            #expect(report["fcm"]?.outcome == "suppressed")
            #expect(rig.fcm.targets.isEmpty)
            let metrics = try await rig.request("GET", "/metrics", token: nil)
            #expect(metrics.text.contains(#"herald_local_deliveries_total{outcome="confirmed"} 1"#))
            #expect(metrics.text.contains("herald_local_confirm_seconds_count 1"))
        }
    }

    @Test func connectedButSilentFallsBackToTheCloudAfterConfirm() async throws {
        // The manual clock's sleep returns at once: the confirm window passes without waiting.
        try await Self.with(confirm: "10s", clock: ManualClock()) { rig in
            let stream = try await rig.register("p1")
            let app = try await Self.open(rig, stream)
            let report = try await rig.send("n-2")
            let events = try await app.read(until: { $0.contains { $0.event == "notification" } })
            app.close()
            #expect(events.contains { $0.event == "notification" })
            #expect(report["local"]?.outcome == "failed")
            #expect(report["local"]?.reason == "not confirmed")
            #expect(report["fcm"]?.outcome == "delivered")
            #expect(rig.fcm.targets.map { $0.device?.deviceId } == ["p1"])
        }
    }

    @Test func notConnectedGoesToTheCloudAtOnce() async throws {
        try await Self.with { rig in
            _ = try await rig.register("p1")
            let report = try await rig.send("n-3")
            #expect(report["local"]?.outcome == "failed")
            #expect(report["local"]?.reason == "not connected")
            #expect(report["fcm"]?.outcome == "delivered")
        }
    }

    @Test func theStreamDroppingMidDeliveryGoesToTheCloud() async throws {
        try await Self.with { rig in
            let stream = try await rig.register("p1")
            let app = try await Self.open(rig, stream)
            let sending = Task { try await rig.send("n-4") }
            _ = try await app.read(until: { $0.contains { $0.event == "notification" } })
            app.close()
            let report = try await sending.value
            #expect(report["local"]?.outcome == "failed")
            #expect(report["local"]?.reason == "stream closed")
            #expect(report["fcm"]?.outcome == "delivered")
        }
    }

    @Test func aLateConfirmIsAnEventOnly() async throws {
        try await Self.with(confirm: "10s", clock: ManualClock()) { rig in
            let stream = try await rig.register("p1")
            let app = try await Self.open(rig, stream)
            let report = try await rig.send("n-5")
            app.close()
            #expect(report["fcm"]?.outcome == "delivered")
            let late = try await rig.confirm("n-5", device: "p1")
            #expect(late.status == 201)
            let history = try await rig.request("GET", "/v1/notifications/n-5")
            let deliveries = try #require(history.json?["deliveries"] as? [[String: Any]], "\(history.text)")
            let local = try #require(deliveries.first { $0["channel"] as? String == "local" })
            #expect(local["outcome"] as? String == "failed" || local["state"] as? String == "failed")
            #expect(rig.fcm.targets.count == 1)
            let events = try #require(history.json?["events"] as? [[String: Any]], "\(history.text)")
            #expect(events.contains { $0["kind"] as? String == "received" })
        }
    }

    @Test func aDeviceIdWithASpaceGetsAnEscapedPath() async throws {
        try await Self.with { rig in
            let stream = try await rig.register("my phone")
            #expect(stream.path == "/v1/devices/my%20phone/stream")
            let app = try await Self.open(rig, stream)
            app.close()
        }
    }

    @Test func aWrongCredentialIs401() async throws {
        try await Self.with { rig in
            let stream = try await rig.register("p1")
            let other = try await rig.register("p2")
            for token in [nil, "hls_wrong", other.secret, ServerHarness.admin] {
                let r = try await rig.request("GET", stream.path, token: token)
                #expect(r.status == 401, "\(token ?? "none"): \(r.text)")
            }
            // The right secret of a device that no longer exists: 404.
            let gone = try await rig.request("DELETE", "/v1/devices?namespace=default&deviceId=p1")
            #expect(gone.status == 204)
            let r = try await rig.request("GET", stream.path, token: stream.secret)
            #expect(r.status == 404)
        }
    }

    @Test func aConfirmForAnotherNamespacesNotificationIs404() async throws {
        try await Self.with { rig in
            _ = try await rig.register("p1")
            _ = try await rig.send("n-6")
            let r = try await rig.request(
                "POST", "/v1/notifications/n-6/events", token: ServerHarness.other,
                json: #"{"kind":"received","deviceId":"p1"}"#)
            #expect(r.status == 404)
        }
    }

    @Test func streamsPerDeviceAreBounded() async throws {
        var settings = ServerHarness.defaults
        settings.maxStreamsPerToken = 2
        try await Self.with { rig in
            let stream = try await rig.register("p1")
            rig.server.reload(server: settings)
            let a = try await Self.open(rig, stream)
            let b = try await Self.open(rig, stream)
            let third = try await rig.request("GET", stream.path, token: stream.secret)
            #expect(third.status == 429)
            #expect(third.errorCode == "too_many_streams")
            a.close()
            b.close()
        }
    }
}
