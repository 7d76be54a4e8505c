import ChannelAPI
import Foundation
import HeraldCrypto

/// RFC 8292 (VAPID) building blocks: the token audience, subject rules, the JWT and the
/// `Authorization` header. Pure; the key ring and the token cache live beside it.
public enum VAPID {
    /// The protected header, byte for byte: `{"typ":"JWT","alg":"ES256"}`.
    public static let headerJSON = Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8)
    /// The longest token lifetime a push service accepts (RFC 8292 §2; Apple enforces it).
    public static let maxExpiration: Duration = .seconds(24 * 3600)
    /// The default token lifetime, leaving room for clock skew.
    public static let defaultExpiration: Duration = .seconds(12 * 3600)

    /// The `aud` claim: the origin of the push resource (`scheme://host[:port]`, the port only when
    /// it is not the scheme's default, no path, no trailing slash). Nil for a URL without a host.
    public static func audience(for endpoint: String) -> String? {
        URLComponents(string: endpoint).flatMap(audience(of:))
    }

    /// The `aud` claim for an already parsed endpoint (see ``audience(for:)``).
    public static func audience(of comps: URLComponents) -> String? {
        guard let scheme = comps.scheme?.lowercased(), let rawHost = comps.host, !rawHost.isEmpty else { return nil }
        var host = rawHost.lowercased()
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        if let port = comps.port, port != defaultPort { return "\(scheme)://\(host):\(port)" }
        return "\(scheme)://\(host)"
    }

    /// Checks a `sub` claim: a `mailto:` or `https:` URI, no whitespace or angle brackets, not a
    /// localhost address (Apple rejects those). Returns the problem, or nil when it is fine.
    public static func subjectProblem(_ subject: String) -> String? {
        if subject.isEmpty { return "vapid.subject is required (mailto: or https: contact URI)" }
        if subject.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0 == "<" || $0 == ">" }) {
            return "vapid.subject must not contain spaces or angle brackets (write mailto:ops@example.com)"
        }
        let lower = subject.lowercased()
        let host: String
        if lower.hasPrefix("mailto:") {
            let address = lower.dropFirst("mailto:".count)
            guard let at = address.lastIndex(of: "@"), at != address.startIndex,
                address.index(after: at) != address.endIndex
            else { return "vapid.subject mailto: needs an address like mailto:ops@example.com" }
            host = String(address[address.index(after: at)...].prefix { $0 != "?" })
        } else if lower.hasPrefix("https://") {
            guard let h = URLComponents(string: subject)?.host?.lowercased(), !h.isEmpty else {
                return "vapid.subject is not a valid https URL"
            }
            host = h
        } else {
            return "vapid.subject must be a mailto: or https: URI"
        }
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare.hasPrefix("127.") || bare == "::1"
            || !bare.contains(where: { $0 == "." || $0 == ":" })
        {
            return
                "vapid.subject must name a real public contact (\(host) is refused; Apple rejects localhost subjects)"
        }
        return nil
    }

    /// The claims JSON (`aud`, `exp`, `sub`; keys sorted, byte-identical to JSON.stringify).
    public static func claimsJSON(audience: String, expiresAt: Int64, subject: String) -> [UInt8] {
        JSONValue.object([
            "aud": .string(audience), "exp": .number(Double(expiresAt)), "sub": .string(subject),
        ]).canonicalBytes
    }

    /// Signs a VAPID JWT (ES256, compact serialisation).
    public static func token(
        audience: String, expiresAt: Int64, subject: String, key: P256PrivateKey
    ) throws(CryptoError) -> String {
        try JWS.compact(
            headerJSON: headerJSON, payloadJSON: claimsJSON(audience: audience, expiresAt: expiresAt, subject: subject),
            algorithm: .es256(key))
    }

    /// `vapid t=<jwt>, k=<base64url public key>`.
    public static func authorization(token: String, publicKey: [UInt8]) -> String {
        "vapid t=\(token), k=\(Base64.urlEncode(publicKey))"
    }
}
