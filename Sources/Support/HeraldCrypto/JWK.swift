/// A JSON Web Key (RFC 7517) for an EC key; all byte values are base64url without padding.
public struct JWK: Sendable, Equatable, Codable {
    /// Key type; `"EC"` for keys produced by HeraldCrypto.
    public var kty: String
    /// Curve; `"P-256"` for keys produced by HeraldCrypto.
    public var crv: String
    /// The x coordinate (32 bytes, base64url).
    public var x: String
    /// The y coordinate (32 bytes, base64url).
    public var y: String
    /// The private scalar (32 bytes, base64url), or `nil` for a public key.
    public var d: String?

    /// Creates a JWK from its members.
    public init(kty: String = "EC", crv: String = "P-256", x: String, y: String, d: String? = nil) {
        self.kty = kty
        self.crv = crv
        self.x = x
        self.y = y
        self.d = d
    }

    /// The RFC 7638 thumbprint input: the required EC members in lexicographic order, no whitespace,
    /// `{"crv":…,"kty":…,"x":…,"y":…}` (`d` never included).
    public var thumbprintInput: String {
        "{\"crv\":\(Self.quoted(crv)),\"kty\":\(Self.quoted(kty)),\"x\":\(Self.quoted(x)),\"y\":\(Self.quoted(y))}"
    }

    /// The RFC 7638 JWK thumbprint: base64url (no padding) of SHA-256 over ``thumbprintInput``.
    public var thumbprint: String {
        Base64.urlEncode(SHA256.hash(Array(thumbprintInput.utf8)))
    }

    /// JSON string literal for `value` (RFC 8259 escaping of quote, backslash and control characters).
    private static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
