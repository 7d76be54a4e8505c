import Foundation
import HeraldCrypto
import Testing

private struct ES256Vector: Decodable {
    var jwk: JWK
    var jws: String
    var payloadUtf8: String
}

private struct PEMVector: Decodable {
    var jwk: JWK
    var pkcs8Pem: String
    var sec1Pem: String
}

private struct VAPIDVector: Decodable {
    var token: String
    var k: String
    var claimsUtf8: String
}

@Suite("P-256, ECDSA and JWS")
struct P256Tests {
    @Test("RFC 7515 A.3: the example ES256 JWS verifies with its JWK")
    func rfc7515Verify() throws {
        let vector: ES256Vector = try Vectors.load("rfc7515-a3-es256.json")
        let publicKey = try P256PublicKey(jwk: vector.jwk)
        let payload = try JWS.verifyES256(vector.jws, publicKey: publicKey)
        #expect(payload == Array(vector.payloadUtf8.utf8))
        // The private key's d yields the same public key.
        let privateKey = try P256PrivateKey(jwk: vector.jwk)
        #expect(privateKey.publicKey == publicKey)
        #expect(privateKey.jwk == vector.jwk)
        #expect(publicKey.jwk == JWK(x: vector.jwk.x, y: vector.jwk.y))
        // One changed payload byte breaks the signature.
        var parts = vector.jws.split(separator: ".").map(String.init)
        var claims = try Base64.urlDecode(parts[1])
        claims[2] ^= 1
        parts[1] = Base64.urlEncode(claims)
        do {
            _ = try JWS.verifyES256(parts.joined(separator: "."), publicKey: publicKey)
            Issue.record("tampered JWS verified")
        } catch {
            #expect(error.code == .authenticationFailed)
        }
    }

    @Test("RFC 8292: the example VAPID token verifies with its k key")
    func rfc8292() throws {
        let vector: VAPIDVector = try Vectors.load("rfc8292-vapid.json")
        let key = try P256PublicKey(x963Representation: try Base64.urlDecode(vector.k))
        let claims = try JWS.verifyES256(vector.token, publicKey: key)
        #expect(claims == Array(vector.claimsUtf8.utf8))
        // Another key must not verify it.
        let other = try P256PrivateKey().publicKey
        #expect(throws: CryptoError.self) { try JWS.verifyES256(vector.token, publicKey: other) }
    }

    @Test("ES256 sign + verify round trip through JWS.compact")
    func signVerifyRoundTrip() throws {
        let key = try P256PrivateKey()
        let header: [UInt8] = Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8)
        let payload: [UInt8] = Array(#"{"aud":"https://push.example.net","exp":1453523768}"#.utf8)
        let token = try JWS.compact(headerJSON: header, payloadJSON: payload, algorithm: .es256(key))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(try Base64.urlDecode(String(parts[2])).count == 64)
        #expect(try JWS.verifyES256(token, publicKey: key.publicKey) == payload)
        let signature = try key.signature(for: [1, 2, 3])
        #expect(key.publicKey.isValidSignature(signature, for: [1, 2, 3]))
        #expect(!key.publicKey.isValidSignature(signature, for: [1, 2, 4]))
        #expect(!(try P256PrivateKey()).publicKey.isValidSignature(signature, for: [1, 2, 3]))
    }

    @Test("JWS.verifyES256 rejects a non-ES256 alg, crit, wrong part counts and bad signature lengths")
    func jwsNegatives() throws {
        let key = try P256PrivateKey()
        let hs = try JWS.compact(
            headerJSON: Array(#"{"alg":"HS256"}"#.utf8), payloadJSON: [], algorithm: .hs256([1, 2, 3]))
        let crit = try JWS.compact(
            headerJSON: Array(#"{"alg":"ES256","crit":["b64"]}"#.utf8), payloadJSON: [], algorithm: .es256(key))
        let good = try JWS.compact(
            headerJSON: Array(#"{"alg":"ES256"}"#.utf8), payloadJSON: [1], algorithm: .es256(key))
        let goodParts = good.split(separator: ".").map(String.init)
        let shortSignature =
            goodParts[0] + "." + goodParts[1] + "." + Base64.urlEncode([UInt8](repeating: 1, count: 63))
        for token in [hs, crit, "a.b", "a.b.c.d", "", shortSignature, goodParts[0] + ".." + goodParts[2]] {
            #expect(throws: CryptoError.self, "\(token)") { try JWS.verifyES256(token, publicKey: key.publicKey) }
        }
        #expect(throws: CryptoError.self) {
            try JWS.compact(headerJSON: [], payloadJSON: [], algorithm: .hs256([]))
        }
    }

    @Test("HS256 compact JWS matches HMAC over the signing input")
    func hs256() throws {
        let secret: [UInt8] = Array("secret".utf8)
        let token = try JWS.compact(
            headerJSON: Array(#"{"alg":"HS256"}"#.utf8), payloadJSON: Array("{}".utf8), algorithm: .hs256(secret))
        let parts = token.split(separator: ".").map(String.init)
        let mac = HMACSHA256.authenticationCode(key: secret, message: Array((parts[0] + "." + parts[1]).utf8))
        #expect(parts[2] == Base64.urlEncode(mac))
    }

    @Test("ECDSA signature raw <-> DER round trip, including short r/s")
    func derRoundTrip() throws {
        let key = try P256PrivateKey()
        for index in 0..<20 {
            let signature = try key.signature(for: [UInt8(index)])
            let der = signature.derRepresentation
            #expect(der.first == 0x30)
            #expect(try ECDSASignature(derRepresentation: der) == signature)
        }
        // r with leading zero bytes and s with a high bit set exercise padding and DER sign bytes.
        let raw: [UInt8] = [0, 0, 0] + [UInt8](repeating: 0x7F, count: 29) + [UInt8](repeating: 0xFF, count: 32)
        let signature = try ECDSASignature(rawRepresentation: raw)
        let der = signature.derRepresentation
        #expect(try ECDSASignature(derRepresentation: der).rawRepresentation == raw)
        #expect(der.count == 2 + (2 + 29) + (2 + 33))
    }

    @Test("signature negatives: wrong raw lengths, malformed or trailing DER")
    func signatureNegatives() throws {
        for length in [0, 63, 65, 128] {
            #expect(throws: CryptoError.self) {
                try ECDSASignature(rawRepresentation: [UInt8](repeating: 1, count: length))
            }
        }
        let der = try ECDSASignature(rawRepresentation: [UInt8](repeating: 1, count: 64)).derRepresentation
        for bad in [[], [0x30, 0x00, 0x01], Array(der.dropLast()), der + [0]] {
            #expect(throws: CryptoError.self) { try ECDSASignature(derRepresentation: bad) }
        }
    }

    @Test("private key raw/PEM/JWK round trips and ECDH agreement")
    func privateKeyRoundTrips() throws {
        let key = try P256PrivateKey()
        let raw = key.rawRepresentation
        #expect(raw.count == 32)
        let fromRaw = try P256PrivateKey(rawRepresentation: raw)
        #expect(fromRaw.publicKey == key.publicKey)
        let pem = key.pemRepresentation
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try P256PrivateKey(pemRepresentation: pem).rawRepresentation == raw)
        #expect(try P256PrivateKey(jwk: key.jwk).rawRepresentation == raw)
        let x963 = key.publicKey.x963Representation
        #expect(x963.count == 65 && x963[0] == 4)
        #expect(try P256PublicKey(x963Representation: x963) == key.publicKey)
        #expect(try P256PublicKey(jwk: key.publicKey.jwk) == key.publicKey)
        let peer = try P256PrivateKey()
        let ab = try key.sharedSecret(with: peer.publicKey)
        let ba = try peer.sharedSecret(with: key.publicKey)
        #expect(ab.count == 32 && ab == ba)
    }

    @Test("P-256 PEM import: PKCS#8 (.p8 style) and SEC 1 EC PRIVATE KEY")
    func pemImport() throws {
        let vector: PEMVector = try Vectors.load("p256-pem.json")
        let expectedD = try Base64.urlDecode(vector.jwk.d ?? "")
        let p8 = try P256PrivateKey(pemRepresentation: vector.pkcs8Pem)
        let sec1 = try P256PrivateKey(pemRepresentation: vector.sec1Pem)
        #expect(p8.rawRepresentation == expectedD)
        #expect(sec1.rawRepresentation == expectedD)
        #expect(p8.publicKey == (try P256PublicKey(jwk: vector.jwk)))
        #expect(p8.jwk == vector.jwk)
    }

    @Test("P-256 PEM generated by the openssl CLI imports and its signatures verify with openssl dgst")
    func opensslInterop() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyPath = dir.appendingPathComponent("key.p8").path
        let pubPath = dir.appendingPathComponent("pub.pem").path
        let msgPath = dir.appendingPathComponent("msg").path
        let sigPath = dir.appendingPathComponent("sig").path
        let gen = try run(
            "openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", keyPath])
        #expect(gen.status == 0, "\(gen.stderr)")
        #expect(try run("openssl", ["pkey", "-in", keyPath, "-pubout", "-out", pubPath]).status == 0)
        let key = try P256PrivateKey(pemRepresentation: try String(contentsOfFile: keyPath, encoding: .utf8))
        let message: [UInt8] = Array("interop".utf8)
        let der = try key.signature(for: message).derRepresentation
        try Data(message).write(to: URL(fileURLWithPath: msgPath))
        try Data(der).write(to: URL(fileURLWithPath: sigPath))
        let verify = try run("openssl", ["dgst", "-sha256", "-verify", pubPath, "-signature", sigPath, msgPath])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
    }

    @Test("key negatives: point not on curve, wrong lengths, bad scalars, malformed PEM, wrong key type")
    func keyNegatives() throws {
        let vector: VAPIDVector = try Vectors.load("rfc8292-vapid.json")
        var point = try Base64.urlDecode(vector.k)
        point[64] ^= 1
        do {
            _ = try P256PublicKey(x963Representation: point)
            Issue.record("off-curve point accepted")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(!error.call.isEmpty)
        }
        let valid = try Base64.urlDecode(vector.k)
        // Coordinates at or above the field prime p, and (0, 0), are refused too.
        let prime: [UInt8] = [
            0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        ]
        let outOfRange = [
            [0x04] + prime + Array(valid[33..<65]), [0x04] + Array(valid[1..<33]) + prime,
            [0x04] + [UInt8](repeating: 0xFF, count: 64), [0x04] + [UInt8](repeating: 0, count: 64),
        ]
        for bad in outOfRange {
            #expect(throws: CryptoError.self) { try P256PublicKey(x963Representation: bad) }
        }
        for bad in [Array(valid.prefix(64)), valid + [0], [0x02] + valid.dropFirst(), [], Array(valid.prefix(33))] {
            #expect(throws: CryptoError.self) { try P256PublicKey(x963Representation: bad) }
        }
        let order = try hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
        for bad in [
            [UInt8](repeating: 1, count: 31), [UInt8](repeating: 1, count: 33), [UInt8](repeating: 0, count: 32), order,
            [UInt8](repeating: 0xFF, count: 32),
        ] {
            #expect(throws: CryptoError.self) { try P256PrivateKey(rawRepresentation: bad) }
        }
        var orderMinusOne = order
        orderMinusOne[31] -= 1
        #expect((try? P256PrivateKey(rawRepresentation: orderMinusOne)) != nil)
        let badPEMs = [
            "",
            "not a pem",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n",
        ]
        for pem in badPEMs {
            do {
                _ = try P256PrivateKey(pemRepresentation: pem)
                Issue.record("malformed PEM accepted")
            } catch {
                #expect(error.code == .invalidPEM, "\(error)")
            }
            #expect(throws: CryptoError.self) { try RSAPrivateKey(pemRepresentation: pem) }
        }
        var jwk = try P256PrivateKey().jwk
        jwk.x = try P256PrivateKey().jwk.x  // x of another key: must not match d
        #expect(throws: CryptoError.self) { try P256PrivateKey(jwk: jwk) }
        #expect(throws: CryptoError.self) { try P256PrivateKey(jwk: JWK(x: jwk.x, y: jwk.y)) }
        #expect(throws: CryptoError.self) { try P256PublicKey(jwk: JWK(kty: "RSA", x: jwk.x, y: jwk.y)) }
        #expect(throws: CryptoError.self) { try P256PublicKey(jwk: JWK(crv: "P-384", x: jwk.x, y: jwk.y)) }
    }
}
