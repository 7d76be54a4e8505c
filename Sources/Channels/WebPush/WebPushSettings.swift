import ChannelAPI

/// The `type: webpush` configuration, checked when the config is loaded.
///
/// ```yaml
/// webpush:
///   type: webpush
///   vapid: { subject: "mailto:ops@example.com", expiration: 12h }
///   padding: bucket          # bucket (default) | none
///   default-ttl: 24h         # TTL when the notification gives none
///   allow-hosts: [127.0.0.1] # shared key: private/loopback endpoints allowed (tests, self-hosted)
/// ```
public struct WebPushSettings: Sendable, Equatable {
    /// The VAPID `sub` claim (`mailto:` or `https:`).
    public var subject: String
    /// VAPID token lifetime (`exp` − now); at most 24 h.
    public var expiration: Duration
    /// Plaintext padding policy.
    public var padding: WebPushPadding
    /// TTL in seconds when the notification gives none.
    public var defaultTTL: Int
    /// Hosts allowed for endpoints despite being private/loopback (or plain http).
    public var allowHosts: [String]

    /// Creates settings; `subject` must pass ``VAPID/subjectProblem(_:)``.
    public init(
        subject: String, expiration: Duration = VAPID.defaultExpiration, padding: WebPushPadding = .default,
        defaultTTL: Int = WebPushHeaders.defaultTTL, allowHosts: [String] = []
    ) {
        self.subject = subject
        self.expiration = expiration
        self.padding = padding
        self.defaultTTL = defaultTTL
        self.allowHosts = allowHosts
    }

    /// Reads `vapid`, `padding` and `default-ttl` from a channel's config.
    public static func parse(_ config: ChannelConfig) throws(ConfigError) -> WebPushSettings {
        guard let vapid = config.node("vapid") else {
            throw config.error(
                at: nil, "channel \(config.name): missing required key 'vapid' ({ subject: \"mailto:…\" })")
        }
        var subjectNode: ConfigNode?
        var expirationNode: ConfigNode?
        for e in try vapid.mapping("vapid") {
            switch e.key {
            case "subject": subjectNode = e.value
            case "expiration": expirationNode = e.value
            default: throw e.keyNode.error("unknown key '\(e.key)' in vapid (expected expiration, subject)")
            }
        }
        guard let subjectNode else { throw vapid.error("vapid.subject is required (mailto: or https: contact URI)") }
        let subject = try subjectNode.string("vapid.subject")
        if let problem = VAPID.subjectProblem(subject), !subjectNode.hasUnresolvedVariables {
            throw subjectNode.error(problem)
        }
        var expiration = VAPID.defaultExpiration
        if let expirationNode, !expirationNode.isNull {
            expiration = try expirationNode.duration("vapid.expiration")
            guard expiration >= .seconds(60) else { throw expirationNode.error("vapid.expiration must be at least 1m") }
            guard expiration <= VAPID.maxExpiration else {
                throw expirationNode.error("vapid.expiration must be at most 24h (push services refuse longer tokens)")
            }
        }
        var padding = WebPushPadding.default
        if let p = try config.choice("padding", ["bucket", "none"]), p == "none" { padding = .none }
        var ttl = WebPushHeaders.defaultTTL
        if let d = try config.duration("default-ttl") {
            guard d <= .seconds(28 * 86_400) else {
                throw config.error(at: "default-ttl", "default-ttl must be at most 28d")
            }
            ttl = Int(d.components.seconds)
        }
        return WebPushSettings(
            subject: subject, expiration: expiration, padding: padding, defaultTTL: ttl, allowHosts: config.allowHosts)
    }
}
