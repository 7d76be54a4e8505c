import Foundation
import HeraldCrypto
import Testing

private struct ThumbprintVector: Decodable {
    var rsaCanonicalJson: String
    var rsaThumbprint: String
    var ecJwk: JWK
    var ecCanonicalJson: String
    var ecThumbprint: String
}

@Suite("JWK and RFC 7638 thumbprints")
struct JWKTests {
    @Test("RFC 7638 §3.1: SHA-256 + base64url of the published canonical JSON gives the published thumbprint")
    func rfc7638Example() throws {
        let vector: ThumbprintVector = try Vectors.load("rfc7638-thumbprint.json")
        #expect(Base64.urlEncode(SHA256.hash(Array(vector.rsaCanonicalJson.utf8))) == vector.rsaThumbprint)
    }

    @Test("EC thumbprint of the RFC 8292 key (expected value computed with Python hashlib)")
    func ecThumbprint() throws {
        let vector: ThumbprintVector = try Vectors.load("rfc7638-thumbprint.json")
        #expect(vector.ecJwk.thumbprintInput == vector.ecCanonicalJson)
        #expect(vector.ecJwk.thumbprint == vector.ecThumbprint)
        let key = try P256PublicKey(jwk: vector.ecJwk)
        #expect(key.jwk.thumbprint == vector.ecThumbprint)
    }

    @Test("member ordering: crv, kty, x, y regardless of input order, whitespace, d or extra members")
    func memberOrdering() throws {
        let vector: ThumbprintVector = try Vectors.load("rfc7638-thumbprint.json")
        let x = vector.ecJwk.x
        let y = vector.ecJwk.y
        let scrambled = """
            {
              "y": "\(y)", "kid": "vapid-1", "use": "sig",
              "x": "\(x)",
              "kty": "EC", "crv": "P-256", "d": "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"
            }
            """
        let decoded = try JSONDecoder().decode(JWK.self, from: Data(scrambled.utf8))
        #expect(decoded.thumbprintInput == #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#)
        #expect(decoded.thumbprint == vector.ecThumbprint)
        // The required members are sorted lexicographically by Unicode code point, with no whitespace.
        let input = decoded.thumbprintInput
        #expect(!input.contains(" ") && !input.contains("\n"))
        let names = ["\"crv\"", "\"kty\"", "\"x\"", "\"y\""]
        let offsets = names.compactMap { input.range(of: $0)?.lowerBound }
        #expect(offsets.count == 4 && offsets == offsets.sorted())
        #expect(names == names.sorted())
        // Changing any required member changes the thumbprint; JSON-special characters are escaped.
        var changed = decoded
        changed.crv = "P-\"256"
        #expect(changed.thumbprintInput.contains(#""crv":"P-\"256""#))
        #expect(changed.thumbprint != decoded.thumbprint)
    }

    @Test("Codable round trip omits d for public keys")
    func codable() throws {
        let key = try P256PrivateKey()
        let publicJSON = String(decoding: try JSONEncoder().encode(key.publicKey.jwk), as: UTF8.self)
        #expect(!publicJSON.contains("\"d\""))
        let privateJWK = key.jwk
        let roundTrip = try JSONDecoder().decode(JWK.self, from: try JSONEncoder().encode(privateJWK))
        #expect(roundTrip == privateJWK)
        #expect(roundTrip.d != nil)
    }
}
