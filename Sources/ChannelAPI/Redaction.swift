/// Helpers that keep secrets out of logs and listings.
public enum Redaction {
    /// A masked form that lets a person tell two values apart without revealing either:
    /// the first 4 and last 4 characters of long values, `‹redacted›` for short ones.
    public static func mask(_ secret: String) -> String {
        guard secret.count > 16 else { return "‹redacted›" }
        return "\(secret.prefix(4))…\(secret.suffix(4))"
    }

    /// Replaces every occurrence of each secret in `text` with `‹redacted›`.
    public static func scrub(_ text: String, secrets: [String]) -> String {
        var out = text
        for s in secrets where s.count >= 4 {
            out = out.replacingAll(s, with: "‹redacted›")
        }
        return out
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
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
}
