import ChannelAPI
import HeraldChannels
import HeraldHTTP
import HeraldHTTPTesting
import NtfyChannel
import Router
import RouterTesting
import Testing

/// A channel module from outside the built-in set, registered by its `type:` name and driven
/// through the router against a loopback server.
@Suite(.stopsFakeHTTPServers) struct PluginChannelTests {
    @Test func ntfyPluginRoutesThroughRouter() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/", [FakeHTTPResponse.json(200, #"{"id":"abc"}"#)])
        var registry = HeraldChannels.registry
        registry.register(NtfyChannel.factory)
        let yaml = """
            version: 1
            store: { path: \(Harness.tempPath()) }
            channels:
              ntfy: { type: ntfy, server: "\(server.baseURL)/", token: secret-token-value }
            routes:
              default:
                - deliver: [ntfy]
            """
        let config = try ConfigLoader.parse(yaml, registry: registry)
        let logs = RecordingLogSink()
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(logSink: logs, http: HTTPClientConfiguration(caFile: server.caFile)))
        await #expect(throws: ValidationError.self) {
            try await router.register(Device(deviceId: "p", platform: "ntfy", fields: ["topic": "bad topic!"]))
        }
        try await router.register(Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"]))
        let report = try await router.send(Notification(title: "Disk full", body: "94% used", priority: .high))
        #expect(report.outcome("ntfy", "p") == .delivered)
        let r = try #require(try await server.requests().first)
        #expect(r.header("authorization") == "Bearer secret-token-value")
        let body = try JSONValue.parse(r.body)
        #expect(body["topic"] == "alerts")
        #expect(body["title"] == "Disk full")
        #expect(body["priority"] == 5)
        #expect(!logs.text.contains("secret-token-value"))
        await router.shutdown()
    }
}
