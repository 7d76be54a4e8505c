import ChannelAPI
import Foundation
import HeraldCrypto

/// The OAuth 2.0 JWT-bearer assertion a service account signs to get an access token, and the
/// token request that carries it. Pure: no I/O.
public enum FCMAssertion {
    /// The OAuth scope FCM's send method needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The RFC 7523 grant type.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Lifetime of an assertion; Google accepts at most one hour.
    public static let lifetime: Int64 = 3600

    /// The header JSON: `{"alg":"RS256","kid":…,"typ":"JWT"}` (`kid` only when the file has a `private_key_id`).
    public static func header(for account: FCMServiceAccount) -> JSONValue {
        var h: [String: JSONValue] = ["alg": "RS256", "typ": "JWT"]
        if let kid = account.privateKeyId { h["kid"] = .string(kid) }
        return .object(h)
    }

    /// The claims: `iss` = `sub` = client_email, `scope`, `aud` = token_uri, `iat` = now, `exp` = iat + 3600.
    public static func claims(for account: FCMServiceAccount, now: Date) -> JSONValue {
        let iat = now.secondsSince1970
        return .object([
            "iss": .string(account.clientEmail), "sub": .string(account.clientEmail), "scope": .string(scope),
            "aud": .string(account.tokenURI), "iat": .number(Double(iat)), "exp": .number(Double(iat + lifetime)),
        ])
    }

    /// The signed compact JWS (RS256 with the account's private key).
    /// - Throws: ``CryptoError`` if signing fails.
    public static func make(for account: FCMServiceAccount, now: Date) throws(CryptoError) -> String {
        try JWS.compact(
            headerJSON: header(for: account).canonicalBytes, payloadJSON: claims(for: account, now: now).canonicalBytes,
            algorithm: .rs256(account.key))
    }

    /// The `application/x-www-form-urlencoded` body: `grant_type=…&assertion=…`.
    public static func tokenRequestBody(assertion: String) -> [UInt8] {
        Array("grant_type=\(formEncode(grantType))&assertion=\(formEncode(assertion))".utf8)
    }

    /// Form-encodes a value: unreserved characters (`A-Z a-z 0-9 - . _ ~`) as they are, the rest as `%XX`.
    static func formEncode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(b >> 4)])
                out.unicodeScalars.append(hex[Int(b & 0x0F)])
            }
        }
        return out
    }
}
