import ChannelAPI
import Foundation
import HeraldChannels
import HeraldServer
import Router
import RouterTesting

/// A test channel that takes webhooks of kind `hook`: header `x-hook-secret: s3cret` and a body
/// `{"notificationId":…,"action":…}` record an action event.
struct HookChannel: Channel {
    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        request.targets.map { DeliveryResult(deliveryId: $0.deliveryId, deviceId: nil, outcome: .delivered) }
    }

    func receiveWebhook(_ request: InboundWebhook, into sink: ChannelEventSink) async -> InboundWebhookAnswer {
        guard request.kind == "hook" else { return .notFound }
        guard request.headers["x-hook-secret"] == "s3cret" else { return .unauthorized }
        guard let body = try? JSONValue.parse(request.body), let id = body["notificationId"]?.stringValue,
            let action = body["action"]?.stringValue
        else { return .invalid("body needs notificationId and action") }
        do {
            try await sink.record(ChannelEvent(notificationId: id, kind: .action, actionId: action))
            return .accepted
        } catch {
            return .invalid("unknown notification")
        }
    }

    static var factory: ChannelFactory {
        ChannelFactory(type: "hook", defaultPlatforms: []) { _, _ throws(ConfigError) in HookChannel() }
    }
}

/// A router over a recording `fcm` channel (platform phone), the `hook` sink and a real Web Push
/// channel, served in-process on 127.0.0.1 with four tokens.
struct ServerHarness {
    let router: Router
    let server: HeraldServer
    let fcm: RecordingChannel
    let home: String

    var port: Int { server.port }

    /// Every scope; namespaces default and team-*.
    static let admin = "hrd_admin-token"
    /// Only `send`, in default.
    static let sender = "hrd_sender-token"
    /// Only `read`, in default.
    static let reader = "hrd_reader-token"
    /// Every scope, only namespace other.
    static let other = "hrd_other-token"

    static func token(_ name: String, _ text: String, _ namespaces: [String], _ scopes: Set<String>) -> APIToken {
        APIToken(name: name, sha256: TokenAuthenticator.sha256Hex(of: text), namespaces: namespaces, scopes: scopes)
    }

    static var tokens: [APIToken] {
        let all: Set<String> = ["send", "devices", "events", "read", "metrics"]
        return [
            token("admin", admin, ["default", "team-*"], all), token("sender", sender, ["default"], ["send"]),
            token("reader", reader, ["default"], ["read"]), token("other", other, ["other"], all),
        ]
    }

    /// Port 0 (any free one), the four tokens, a 1 s keepalive.
    static var defaults: ServerConfig {
        var settings = ServerConfig()
        settings.port = 0
        settings.tokens = tokens
        settings.keepalive = .seconds(1)
        return settings
    }

    static func start(settings: ServerConfig = ServerHarness.defaults) async throws -> ServerHarness {
        let (router, fcm, home) = try await makeRouter()
        let server = try HeraldServer(router: router, server: settings)
        return ServerHarness(router: router, server: server, fcm: fcm, home: home)
    }

    /// The router alone (for the API without a socket); `store` replaces the config's store;
    /// `factories` and `channels` (YAML lines under `channels:`) add channels.
    static func makeRouter(
        store: (@Sendable (String) throws -> any HeraldStore)? = nil, factories: [ChannelFactory] = [],
        channels: String = ""
    ) async throws -> (Router, RecordingChannel, String) {
        let fcm = RecordingChannel()
        var registry = try ChannelRegistry(
            [fcm.factory(type: "rec-fcm", platforms: ["phone"]), HookChannel.factory] + factories)
        if let webpush = HeraldChannels.registry.factory(for: "webpush") { try registry.register(webpush) }
        // The recording channel stands in for FCM: the built-in modules declare the other platforms.
        for p in HeraldChannels.registry.platforms where registry.platform(p.name) == nil {
            try registry.register(platform: p)
        }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let text = """
            version: 1
            store: { path: \(home)/herald.db }
            channels:
              fcm: { type: rec-fcm }
              hook: { type: hook }
              webpush: { type: webpush, vapid: { subject: "mailto:ops@example.com" } }
            \(channels)
            routes:
              default:
                - deliver: [fcm, hook]
                - deliver: [webpush]
            """
        let config = try ConfigLoader.parse(text, registry: registry)
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(logSink: RecordingLogSink(), store: try store?(home + "/herald.db")))
        return (router, fcm, home)
    }

    func stop() async {
        await server.stop(grace: .seconds(2))
        await router.shutdown()
        try? FileManager.default.removeItem(atPath: home)
    }

    func request(
        _ method: String, _ path: String, token: String? = ServerHarness.admin, headers: [String: String] = [:],
        json: String? = nil, body: [UInt8]? = nil
    ) async throws -> RawResponse {
        try await RawHTTP.request(port: port, method, path, token: token, headers: headers, body: body, json: json)
    }

    /// Registers a phone served by the recording fcm channel.
    func registerPhone(_ id: String, namespace: String = "default") async throws {
        try await router.register(
            Device(namespace: namespace, deviceId: id, platform: "phone", fields: ["token": .string("tok-\(id)")]))
    }
}

/// Runs `body` with a started harness, stopping it afterwards even when the body throws.
func withServer(
    _ settings: ServerConfig = ServerHarness.defaults, _ body: (ServerHarness) async throws -> Void
) async throws {
    let h = try await ServerHarness.start(settings: settings)
    do {
        try await body(h)
    } catch {
        await h.stop()
        throw error
    }
    await h.stop()
}
