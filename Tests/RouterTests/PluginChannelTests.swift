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
        try registry.register(NtfyChannel.factory)
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
        let report = try await router.send(HeraldNotification(title: "Disk full", body: "94% used", priority: .high))
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

    /// Issue 34 §4: a YAML route runs in-process over `ScriptedTransport` (`RouterOptions.transport`):
    /// no socket, and the route's retry and fallback come from the scripted answers.
    @Test func aYAMLRouteRunsOverAScriptedTransport() async throws {
        var registry = HeraldChannels.registry
        try registry.register(NtfyChannel.factory)
        let http = ScriptedTransport()
        http.route("https://primary.example/", [.json(503, "{}")])
        http.route("https://backup.example/", [.json(200, #"{"id":"1"}"#)])
        let yaml = """
            version: 1
            store: { path: \(Harness.tempPath()) }
            channels:
              primary: { type: ntfy, server: "https://primary.example/" }
              backup: { type: ntfy, server: "https://backup.example/" }
            routes:
              default:
                - deliver: [primary, backup]
                  mode: first
            """
        let config = try ConfigLoader.parse(yaml, registry: registry)
        let router = try await Router(
            config: config, registry: registry, options: RouterOptions(logSink: RecordingLogSink(), transport: http))
        try await router.register(Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"]))
        let report = try await router.send(HeraldNotification(title: "Disk full"))
        #expect(report.outcome("primary", "p") == .retry)
        #expect(report.outcome("backup", "p") == .delivered)
        #expect(http.requests.map(\.url) == ["https://primary.example/", "https://backup.example/"])
        await router.shutdown()
    }

    /// A router over the built-ins plus the ntfy plugin, with one ntfy channel (`https://ntfy.example/`)
    /// on the default route; `transport` scripts its answers.
    static func ntfyRouter(transport: (any HTTPTransport)? = nil) async throws -> (Router, ChannelRegistry) {
        var registry = HeraldChannels.registry
        try registry.register(NtfyChannel.factory)
        let yaml = """
            version: 1
            store: { path: \(Harness.tempPath()) }
            channels:
              ntfy: { type: ntfy, server: "https://ntfy.example/" }
            routes:
              default:
                - deliver: [ntfy]
            """
        let router = try await Router(
            config: try ConfigLoader.parse(yaml, registry: registry), registry: registry,
            options: RouterOptions(logSink: RecordingLogSink(), transport: transport))
        return (router, registry)
    }

    /// Issue 34 §4: a plugin platform carries per-notification options as `android` does, under its own
    /// name; a name no module declares is still an unknown field.
    @Test func aPluginPlatformCarriesItsOwnOptions() async throws {
        let http = ScriptedTransport()
        http.route("https://ntfy.example/", [.json(200, "{}")])
        let (router, _) = try await Self.ntfyRouter(transport: http)
        try await router.register(Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"]))
        let n = try HeraldNotification(
            jsonText: #"{"title":"Disk full","ntfy":{"icon":"https://example.com/disk.png","tags":["warning"]}}"#)
        #expect(n.platformOptions["ntfy"]?["icon"] == "https://example.com/disk.png")
        #expect(n.json["ntfy"]?["tags"] == ["warning"])
        let report = try await router.send(n)
        #expect(report.outcome("ntfy", "p") == .delivered)
        let body = try JSONValue.parse(try #require(http.requests.first).body)
        #expect(body["icon"] == "https://example.com/disk.png")
        #expect(body["tags"] == ["warning"])
        // A misspelt platform is refused by the router, naming the field; a non-object is refused by the parser.
        let typo = try HeraldNotification(jsonText: #"{"title":"x","ntfyy":{"icon":"y"}}"#)
        await #expect(throws: ValidationError.self) { try await router.send(typo) }
        #expect(throws: ValidationError.self) { try router.enqueue(typo) }
        #expect(throws: ValidationError.self) { try HeraldNotification(jsonText: #"{"title":"x","ntfy":"y"}"#) }
        #expect(throws: ValidationError.self) { try HeraldNotification(jsonText: #"{"title":"x","Ntfy":{}}"#) }
        await router.shutdown()
    }

    /// The ntfy example declares its platform (issue 16 item 2) and gets what a built-in platform
    /// gets: its fields checked once, its topic as the address (the topic moves between namespaces;
    /// unregister-by-token removes it) and its `topic` redacted by name.
    @Test func ntfyDeclaresItsPlatform() async throws {
        let (router, registry) = try await Self.ntfyRouter()
        let descriptor = try #require(registry.platform("ntfy"))
        #expect(descriptor.secretFields == ["topic"])
        // Fields are checked by the descriptor: unknown fields and bad topics are refused by name.
        for (fields, field) in [
            (["topic": JSONValue.string("bad topic!")], "topic"), (["topic": "ok", "colour": "red"], "colour"),
            ([:], "topic"),
        ] as [([String: JSONValue], String)] {
            do {
                try await router.register(Device(deviceId: "p", platform: "ntfy", fields: fields))
                Issue.record("accepted \(fields)")
            } catch let e as ValidationError {
                #expect(e.field == field, "\(e)")
            }
        }
        // The topic moves: registering it in namespace b removes it from default.
        try await router.register(Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"]))
        let moved = try await router.register(
            Device(namespace: "b", deviceId: "q", platform: "ntfy", fields: ["topic": "alerts"]))
        #expect(moved.moved == ["default/p/ntfy"])
        #expect(try router.devices(namespace: "default").isEmpty)
        let stored = try #require(try router.devices(namespace: "b").first)
        #expect(stored.address == "ntfy:alerts")
        // Redaction by name: the topic is a secret field of the platform.
        let listed = registry.redactedJSON(of: stored).canonicalString
        #expect(!listed.contains("alerts"), "\(listed)")
        #expect(registry.secretValues(of: stored) == ["alerts"])
        // Unregister by its address.
        #expect(try router.unregister(namespace: "b", token: "alerts") == 0)
        #expect(try router.unregister(namespace: "b", token: "ntfy:alerts") == 1)
        #expect(try router.devices(namespace: "b").isEmpty)
        await router.shutdown()
    }
}
