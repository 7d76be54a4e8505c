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
        hex.utf8.count == 64 ? Hex.decode(hex) : nil
    }
}
