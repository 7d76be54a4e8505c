import HeraldCrypto
import Router

/// Finds the configured token a bearer token is, by its SHA-256, comparing every configured hash
/// in constant time (a guess learns nothing from the answer's timing). Pure; never logs.
public struct TokenAuthenticator: Sendable {
    let tokens: [(hash: [UInt8], token: APIToken)]

    /// Keeps the tokens whose `sha256` is 64 hex digits.
    public init(tokens: [APIToken]) {
        self.tokens = tokens.compactMap { t in TokenAuthenticator.hexBytes(t.sha256).map { ($0, t) } }
    }

    /// The token whose hash matches `bearer`, or nil.
    public func authenticate(_ bearer: String) -> APIToken? {
        let digest = SHA256.hash(Array(bearer.utf8))
        var found: APIToken?
        for entry in tokens where ConstantTime.equals(entry.hash, digest) && found == nil {
            found = entry.token
        }
        return found
    }

    /// Lower-case hex SHA-256 of a token's UTF-8 bytes (what the config holds).
    public static func sha256Hex(of token: String) -> String {
        Hex.encode(SHA256.hash(Array(token.utf8)))
    }

    static func hexBytes(_ hex: String) -> [UInt8]? {
        let chars = Array(hex.utf8)
        guard chars.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        for i in stride(from: 0, to: 64, by: 2) {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
        }
        return out
    }
}
