/// Text helpers for connection URLs: what may be shown of one, and scrubbing it out of messages.
public enum PostgresURL {
    /// `true` for the URL schemes libpq accepts (`postgresql://`, `postgres://`).
    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// The URL with any password removed: the `user:password@` part becomes `user@`, and a
    /// `password=` query parameter is dropped. Safe to log and to put in error messages.
    public static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else {
            // A key=value string: drop password=…
            return url.split(separator: " ").filter { !$0.lowercased().hasPrefix("password=") }.joined(separator: " ")
        }
        var rest = String(url[schemeEnd.upperBound...])
        var query = ""
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = String(rest[..<q])
        }
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            let user = userinfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            rest = String(user) + String(rest[at...])
        }
        let kept = query.split(separator: "&").filter { !$0.lowercased().hasPrefix("password=") }
        return String(url[..<schemeEnd.upperBound]) + rest + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }

    /// `message` with the full URL and any password found in it replaced by the redacted form or `***`.
    static func scrub(_ message: String, url: String) -> String {
        var out = message.replacingAll(url, with: redacted(url))
        for secret in passwords(in: url) where secret.count >= 2 {
            out = out.replacingAll(secret, with: "***")
        }
        return out
    }

    /// The passwords written in `url` (userinfo and `password=`), as written.
    static func passwords(in url: String) -> [String] {
        var out: [String] = []
        if let schemeEnd = url.range(of: "://") {
            var rest = String(url[schemeEnd.upperBound...])
            if let q = rest.firstIndex(of: "?") {
                for item in rest[rest.index(after: q)...].split(separator: "&")
                where item.lowercased().hasPrefix("password=") {
                    out.append(String(item.dropFirst("password=".count)))
                }
                rest = String(rest[..<q])
            }
            if let at = rest.lastIndex(of: "@") {
                let parts = rest[..<at].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2 {
                    out.append(String(parts[1]))
                    out.append(String(parts[1]).removingPercentEncodingSimple)
                }
            }
        } else {
            for item in url.split(separator: " ") where item.lowercased().hasPrefix("password=") {
                out.append(String(item.dropFirst("password=".count)))
            }
        }
        return out.filter { !$0.isEmpty }
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        return self.split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }

    fileprivate var removingPercentEncodingSimple: String {
        var bytes: [UInt8] = []
        var it = Array(utf8)[...]
        while let c = it.popFirst() {
            if c == UInt8(ascii: "%"), it.count >= 2,
                let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(v)
                it = it.dropFirst(2)
            } else {
                bytes.append(c)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
