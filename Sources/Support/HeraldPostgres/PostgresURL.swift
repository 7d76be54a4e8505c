/// Text helpers for connection URLs: what may be shown of one, and scrubbing it out of messages.
public enum PostgresURL {
    /// The libpq connection parameters whose values are secrets, lowercased: those libpq documents
    /// with the debug display `*` (`PQconndefaults`' `dispchar`): `password`, `sslpassword` (the
    /// passphrase of the client key) and `oauth_client_secret` (libpq 18). They are removed from
    /// every URL shown and their values scrubbed from messages. `sslkey`, `sslcert` and `sslrootcert`
    /// are paths to files, not secrets, and stay.
    public static let secretParameters: Set<String> = ["password", "sslpassword", "oauth_client_secret"]

    /// `true` for the URL schemes libpq accepts (`postgresql://`, `postgres://`).
    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// Whether a URL query item or key=value pair (`key=value`) sets one of ``secretParameters``.
    static func isSecretItem(_ item: Substring) -> Bool {
        let key = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let name = String(key).removingPercentEncodingSimple.trimmingSpaces.lowercased()
        return secretParameters.contains(name)
    }

    /// The URL with every secret removed: the `user:password@` part becomes `user@`, and the query
    /// parameters of ``secretParameters`` (`password=`, `sslpassword=`, …) are dropped. Safe to log
    /// and to put in error messages.
    public static func redacted(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else {
            // A key=value string: drop the secret pairs.
            return keywordPairs(url).filter { !secretParameters.contains($0.key) }.map(\.text)
                .joined(separator: " ")
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
        let kept = query.split(separator: "&").filter { !isSecretItem($0) }
        return String(url[..<schemeEnd.upperBound]) + rest + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }

    /// `message` with the full URL and any secret found in it replaced by the redacted form or `***`.
    static func scrub(_ message: String, url: String) -> String {
        var out = message.replacingAll(url, with: redacted(url))
        for secret in passwords(in: url) where secret.count >= 2 {
            out = out.replacingAll(secret, with: "***")
        }
        return out
    }

    /// The secrets written in `url` (the userinfo password and the values of ``secretParameters``),
    /// as written and percent-decoded.
    static func passwords(in url: String) -> [String] {
        var out: [String] = []
        if let schemeEnd = url.range(of: "://") {
            var rest = String(url[schemeEnd.upperBound...])
            if let q = rest.firstIndex(of: "?") {
                for item in rest[rest.index(after: q)...].split(separator: "&") where isSecretItem(item) {
                    let value = String(item.split(separator: "=", maxSplits: 1).dropFirst().first ?? "")
                    out.append(value)
                    out.append(value.removingPercentEncodingSimple)
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
            for pair in keywordPairs(url) where secretParameters.contains(pair.key) {
                out.append(pair.value)
                out.append(pair.rawValue)
            }
        }
        return out.filter { !$0.isEmpty }
    }

    /// The pairs of a libpq key=value connection string (`host=h password='a b'`), each with its
    /// lowercased key, its value (quotes and `\` escapes removed), the value as written, and its text
    /// as written. Spaces around `=` are allowed, as libpq allows them.
    static func keywordPairs(_ text: String) -> [(key: String, value: String, rawValue: String, text: String)] {
        var pairs: [(key: String, value: String, rawValue: String, text: String)] = []
        let chars = Array(text)
        var i = 0
        func skipSpaces() { while i < chars.count, chars[i].isWhitespace { i += 1 } }
        while true {
            skipSpaces()
            guard i < chars.count else { break }
            let start = i
            var key = ""
            while i < chars.count, !chars[i].isWhitespace, chars[i] != "=" {
                key.append(chars[i])
                i += 1
            }
            skipSpaces()
            guard i < chars.count, chars[i] == "=" else {
                pairs.append((key.lowercased(), "", "", String(chars[start..<i])))
                continue
            }
            i += 1
            skipSpaces()
            let valueStart = i
            var value = ""
            if i < chars.count, chars[i] == "'" {
                i += 1
                while i < chars.count, chars[i] != "'" {
                    if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                    value.append(chars[i])
                    i += 1
                }
                if i < chars.count { i += 1 }
            } else {
                while i < chars.count, !chars[i].isWhitespace {
                    if chars[i] == "\\", i + 1 < chars.count { i += 1 }
                    value.append(chars[i])
                    i += 1
                }
            }
            pairs.append((key.lowercased(), value, String(chars[valueStart..<i]), String(chars[start..<i])))
        }
        return pairs
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        return self.split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }

    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
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
