import ChannelAPI
import HeraldCrypto

/// The RFC 8030 request headers Herald derives from a notification. Pure.
public enum WebPushHeaders {
    /// The TTL used when neither the notification nor the config gives one: 24 hours.
    public static let defaultTTL = 86_400

    /// `TTL` in seconds: the notification's `ttl` (0 allowed: deliver now or drop), else `fallback`.
    public static func ttl(_ notificationTTL: Int?, fallback: Int = defaultTTL) -> Int {
        max(0, notificationTTL ?? fallback)
    }

    /// `Urgency`: `high` for high priority or error/warning severity, `low` for low priority,
    /// otherwise `normal`. The high rule is checked first, so an error sent with low priority is
    /// still `high` (a failure should wake the person).
    public static func urgency(priority: Priority?, severity: Severity?) -> String {
        if priority == .high || severity == .error || severity == .warning { return "high" }
        if priority == .low { return "low" }
        return "normal"
    }

    /// `Topic` from the collapse tag: used as is when it is 1-32 ASCII letters and digits (the
    /// Mozilla rule, stricter than RFC 8030's base64url alphabet); otherwise
    /// base64url(SHA-256(tag)) with `-` and `_` removed, cut to 32 characters. Nil without a tag.
    public static func topic(for collapseTag: String?) -> String? {
        guard let tag = collapseTag, !tag.isEmpty else { return nil }
        if tag.utf8.count <= 32, tag.utf8.allSatisfy(isAlphanumeric) { return tag }
        let hashed = Base64.urlEncode(SHA256.hash(Array(tag.utf8))).filter {
            $0.isASCII && ($0.isLetter || $0.isNumber)
        }
        return String(hashed.prefix(32))
    }

    static func isAlphanumeric(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
    }
}
