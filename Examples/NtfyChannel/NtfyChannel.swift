import ChannelAPI
import ChannelSupport
import Foundation

/// An example channel module built outside the built-in set: publishes to an ntfy server
/// (https://ntfy.sh or self-hosted). Each registered device of platform `ntfy` carries a `topic`.
///
/// ```yaml
/// channels:
///   phone-ntfy:
///     type: ntfy
///     server: https://ntfy.sh
///     token: ${NTFY_TOKEN:-}          # optional access token
/// ```
///
/// Register it before loading the config:
/// ```swift
/// var registry = HeraldChannels.registry
/// try registry.register(NtfyChannel.factory)
/// ```
public struct NtfyChannel: Channel {
    /// The ntfy server base URL.
    public let server: String
    let token: String?
    let http: any HTTPTransport
    let logger: ChannelLogger
    let clock: any HeraldClock

    /// The `ntfy` platform: a device carries one `topic` (1-64 letters, digits, `-` or `_`). Anyone
    /// who knows a topic on a public server can read it, so the topic is a secret field (redacted in
    /// listings, scrubbed from results); the address is `ntfy:<topic>`, so a topic registered again
    /// under another device or namespace moves there, and `unregister(token: "ntfy:<topic>")` removes it.
    public static let platform = PlatformDescriptor(
        name: "ntfy", secretFields: ["topic"], address: { $0.string("topic").map { "ntfy:\($0)" } },
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["topic"])
            guard let topic = fields["topic"]?.stringValue, !topic.isEmpty, topic.count <= 64,
                topic.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            else { throw ValidationError(field: "topic", "required: 1-64 letters, digits, '-' or '_'") }
        })

    /// The factory, registered under `type: ntfy`, serving (and declaring) platform `ntfy`.
    public static let factory = ChannelFactory(type: "ntfy", defaultPlatforms: ["ntfy"], platforms: [platform]) {
        config, context throws(ConfigError) in
        let server = try config.string("server") ?? "https://ntfy.sh"
        guard server.hasPrefix("https://") || server.hasPrefix("http://") else {
            throw config.error(at: "server", "server must be an http(s) URL")
        }
        let token = try config.string("token").flatMap { $0.isEmpty ? nil : $0 }
        return NtfyChannel(
            server: server, token: token, http: context.http,
            logger: context.logger.withSecrets(token.map { [$0] } ?? []), clock: context.clock)
    }

    /// Publishes one message per device (ntfy's JSON publish API).
    ///
    /// Every request is built first, then the whole batch goes to the HTTP client at once (at most 32
    /// in flight, kept full by the event loop), and the answers are classified afterwards.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        await DeliveryBatch.deliver(
            request.targets, over: http, maxInFlight: 32,
            prepare: { target -> DeliveryBatch.Preparation<Void> in
                guard let built = publishRequest(request.notification, to: target) else {
                    return .result(.failed(target, reason: "device has no topic"))
                }
                return .send(built, ())
            },
            classify: { target, _, answer in classify(answer, target) })
    }

    func publishRequest(_ n: HeraldNotification, to target: DeliveryTarget) -> HTTPRequest? {
        guard let topic = target.device?.string("topic") else { return nil }
        var body: [String: JSONValue] = ["topic": .string(topic), "message": .string(n.body ?? n.title ?? "")]
        if let t = n.title { body["title"] = .string(t) }
        if let u = n.url { body["click"] = .string(u) }
        body["priority"] = .number(n.priority == .high ? 5 : n.priority == .low ? 2 : 3)
        if let tag = n.collapseTag { body["tags"] = .array([.string(tag)]) }
        // Per-notification options: `"ntfy": {"icon": "https://…", "tags": ["warning"]}` in the
        // notification (ntfy's own publish fields; tags here replace the collapse tag).
        let options = n.options(for: "ntfy")
        if let icon = options["icon"]?.stringValue { body["icon"] = .string(icon) }
        if let tags = options["tags"]?.arrayValue { body["tags"] = .array(tags.filter { $0.stringValue != nil }) }
        var headers = [HTTPHeader("content-type", "application/json")]
        if let token { headers.append(HTTPHeader("authorization", "Bearer \(token)")) }
        return HTTPRequest(method: "POST", url: server, headers: headers, body: JSONValue.object(body).canonicalBytes)
    }

    func classify(_ answer: Result<HTTPResponse, HTTPError>, _ target: DeliveryTarget) -> DeliveryResult {
        switch answer {
        case .failure(let error):
            return .retry(target, reason: error.description)
        case .success(let r):
            switch r.status {
            case 200..<300: return .delivered(target, status: r.status)
            case 429, 500...599:
                return .retry(
                    target, status: r.status, reason: "ntfy answered \(r.status)",
                    retryAfter: RetryAfter.parse(r, now: clock.now()))
            case 401, 403:
                logger.error("ntfy refused the access token", ["status": "\(r.status)"])
                return .failed(target, status: r.status, reason: "ntfy refused credentials (\(r.status))")
            default: return .failed(target, status: r.status, reason: "ntfy answered \(r.status)")
            }
        }
    }
}
