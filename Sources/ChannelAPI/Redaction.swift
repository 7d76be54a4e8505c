import Foundation

/// Helpers that keep secrets out of logs and listings.
public enum Redaction {
    /// What every fully redacted value is replaced with.
    public static let redacted = "‹redacted›"

    /// A masked form that lets a person tell two values apart without revealing either:
    /// the first 4 and last 4 characters of long values, `‹redacted›` for short ones. Only for
    /// values that identify a device at its provider (a push token, a Web Push endpoint), which an
    /// operator needs to tell apart; a key or a credential is ``field(_:_:)``'s ``redacted``.
    public static func mask(_ secret: String) -> String {
        guard secret.count > 16 else { return redacted }
        return "\(secret.prefix(4))…\(secret.suffix(4))"
    }

    /// The names of secret fields that identify a device at its provider rather than authenticate
    /// to it: a push token (`token`) and a Web Push endpoint (`endpoint`). Listings and logs show them
    /// masked (``mask(_:)``) so two devices can be told apart.
    public static let addressFieldNames: Set<String> = ["token", "endpoint"]

    /// How a listing or a log shows the value of the secret field `name`: masked (``mask(_:)``) for a
    /// device address (``addressFieldNames``), ``redacted`` for every other secret (a `pushKey`, a
    /// Web Push `auth` or `p256dh`, a `secret`, a field a platform declares secret): nothing of
    /// a key is shown.
    public static func field(_ name: String, _ value: String) -> String {
        addressFieldNames.contains(name) ? mask(value) : redacted
    }

    /// Replaces every occurrence of each secret in `text` with `‹redacted›`: the secret as it is, and
    /// its percent-encoded form (a proxy's error page echoing a request path encodes it).
    /// Secrets shorter than 4 characters are left alone (they would redact ordinary words).
    public static func scrub(_ text: String, secrets: [String]) -> String {
        var out = text
        // A percent-encoded form differs from its secret only by `%` escapes: without a `%` in the
        // text, none can appear, and they are not worked out (`addingPercentEncoding` per secret and
        // result was a hot spot of a large fan-out, whose results are scrubbed one by one).
        let mayHoldEscapes = text.utf8.contains(UInt8(ascii: "%"))
        for s in secrets where s.utf8.count >= 4 && s.hasAtLeastFourCharacters {
            guard !out.isEmpty else { break }
            out = out.replacingAll(s, with: "‹redacted›")
            guard mayHoldEscapes else { continue }
            if let encoded = s.addingPercentEncoding(withAllowedCharacters: unreserved), encoded != s {
                out = out.replacingAll(encoded, with: "‹redacted›")
                let lower = lowercasedEscapes(encoded)
                if lower != encoded { out = out.replacingAll(lower, with: "‹redacted›") }
            }
        }
        return out
    }

    /// `result` with every secret scrubbed from the text a provider may have echoed: its reason,
    /// its details and its provider message id.
    public static func scrub(_ result: DeliveryResult, secrets: [String]) -> DeliveryResult {
        var r = result
        r.reason = r.reason.map { scrub($0, secrets: secrets) }
        r.providerMessageId = r.providerMessageId.map { scrub($0, secrets: secrets) }
        if !r.details.isEmpty { r.details = r.details.mapValues { scrub($0, secrets: secrets) } }
        return r
    }

    /// The strings to scrub for PEM key material: the whole text and each base64 line of its body
    /// (an answer may echo a line, not the whole block).
    public static func pemSecrets(_ pem: String) -> [String] {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        return [pem] + lines.filter { $0.count >= 16 && !$0.hasPrefix("-----") }
    }

    /// Whether a config key names a secret (`bot-token`, `secret`, `token`, `password`, `api-key`,
    /// `private-key`, …): its value is scrubbed from everything stored or printed.
    public static func isSecretName(_ key: String) -> Bool {
        let k = key.lowercased()
        if k == "key" || k.hasSuffix("-key") || k.hasSuffix("_key") { return !k.contains("public") }
        return ["token", "secret", "password", "passphrase", "credential", "private", "auth"].contains {
            k.contains($0)
        }
    }

    /// RFC 3986 unreserved characters: everything else is percent-encoded.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// `%3A` → `%3a`.
    private static func lowercasedEscapes(_ s: String) -> String {
        var out = ""
        var pending = 0
        for c in s {
            if c == "%" {
                pending = 2
                out.append(c)
            } else if pending > 0 {
                pending -= 1
                out += c.lowercased()
            } else {
                out.append(c)
            }
        }
        return out
    }
}

extension String {
    /// `self` with every occurrence of `target` replaced; `self` itself (no copy, no Foundation
    /// search) when a byte search finds none, which is nearly always.
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty, containsBytes(of: target) else { return self }
        var result = ""
        var rest = self[...]
        while let r = rest.range(of: target) {
            result += rest[..<r.lowerBound]
            result += replacement
            rest = rest[r.upperBound...]
        }
        result += rest
        return result
    }

    /// `count >= 4`, counting no further than the fourth character (a PEM key's text is scrubbed
    /// from every result of a fan-out).
    var hasAtLeastFourCharacters: Bool {
        var seen = 0
        for _ in self {
            seen += 1
            if seen == 4 { return true }
        }
        return false
    }

    /// Whether the UTF-8 bytes of `needle` occur in those of `self` (a plain byte search; equal
    /// strings in Swift have equal bytes once both are NFC, and secrets and provider text are
    /// compared as sent).
    func containsBytes(of needle: String) -> Bool {
        var haystack = self
        var needle = needle
        return haystack.withUTF8 { h in
            needle.withUTF8 { n in
                guard n.count <= h.count, let first = n.first else { return n.isEmpty }
                var i = 0
                let last = h.count - n.count
                while i <= last {
                    if h[i] == first && memcmp(h.baseAddress! + i, n.baseAddress!, n.count) == 0 { return true }
                    i += 1
                }
                return false
            }
        }
    }
}
