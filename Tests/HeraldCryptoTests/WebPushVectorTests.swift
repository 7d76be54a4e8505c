import HeraldCrypto
import Testing

private struct RFC8291Vector: Decodable {
    var plaintext: String
    var asPublic: String
    var asPrivate: String
    var uaPublic: String
    var uaPrivate: String
    var salt: String
    var authSecret: String
    var ecdhSecret: String
    var prkKey: String
    var keyInfo: String
    var ikm: String
    var prk: String
    var cekInfo: String
    var cek: String
    var nonceInfo: String
    var nonce: String
    var header: String
    var ciphertext: String
    var body: String
    var bodyHex: String
}

/// RFC 8291 Appendix A reproduced by composing HeraldCrypto primitives (the Web Push encryptor lives elsewhere).
@Suite("RFC 8291 Web Push encryption vector")
struct WebPushVectorTests {
    private static func b64(_ text: String) throws -> [UInt8] { try Base64.urlDecode(text) }

    @Test("encrypt with injected asPrivate and salt: every intermediate value and the 144-byte body")
    func encrypt() throws {
        let v: RFC8291Vector = try Vectors.load("rfc8291-appendix-a.json")
        let asPrivate = try P256PrivateKey(rawRepresentation: try Self.b64(v.asPrivate))
        let asPublic = asPrivate.publicKey.x963Representation
        #expect(asPublic == (try Self.b64(v.asPublic)))
        let uaPublicBytes = try Base64.decodeEitherAlphabet(v.uaPublic)
        let uaPublic = try P256PublicKey(x963Representation: uaPublicBytes)
        let authSecret = try Self.b64(v.authSecret)
        let salt = try Self.b64(v.salt)

        let ecdhSecret = try asPrivate.sharedSecret(with: uaPublic)
        #expect(ecdhSecret == (try Self.b64(v.ecdhSecret)))
        let prkKey = HKDF.extract(salt: authSecret, inputKeyMaterial: ecdhSecret)
        #expect(prkKey == (try Self.b64(v.prkKey)))
        let keyInfo = Array("WebPush: info".utf8) + [0] + uaPublicBytes + asPublic
        #expect(keyInfo.count == 144)
        #expect(keyInfo == (try Self.b64(v.keyInfo)))
        let ikm = try HKDF.expand(pseudoRandomKey: prkKey, info: keyInfo, length: 32)
        #expect(ikm == (try Self.b64(v.ikm)))
        let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
        #expect(prk == (try Self.b64(v.prk)))
        let cekInfo = Array("Content-Encoding: aes128gcm".utf8) + [0]
        #expect(cekInfo == (try Self.b64(v.cekInfo)))
        let cek = try HKDF.expand(pseudoRandomKey: prk, info: cekInfo, length: 16)
        #expect(cek == (try Self.b64(v.cek)))
        let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0]
        #expect(nonceInfo == (try Self.b64(v.nonceInfo)))
        let nonce = try HKDF.expand(pseudoRandomKey: prk, info: nonceInfo, length: 12)
        #expect(nonce == (try Self.b64(v.nonce)))

        let header = salt + [0x00, 0x00, 0x10, 0x00] + [0x41] + asPublic
        #expect(header.count == 86)
        #expect(header == (try Self.b64(v.header)))
        let plaintext = try Self.b64(v.plaintext)
        #expect(plaintext.count == 41)
        let ciphertext = try AESGCM.seal(plaintext + [0x02], key: cek, nonce: nonce)
        #expect(ciphertext == (try Self.b64(v.ciphertext)))
        let body = header + ciphertext
        #expect(body.count == 144)
        #expect(body == (try Self.b64(v.body)))
        #expect(hexString(body) == v.bodyHex)

        // Swapping uaPublic and asPublic in keyInfo (an easy mistake) gives a different IKM.
        let swapped = Array("WebPush: info".utf8) + [0] + asPublic + uaPublicBytes
        #expect(try HKDF.expand(pseudoRandomKey: prkKey, info: swapped, length: 32) != ikm)
    }

    @Test("decrypt the RFC body with uaPrivate and authSecret")
    func decrypt() throws {
        let v: RFC8291Vector = try Vectors.load("rfc8291-appendix-a.json")
        let body = try Self.b64(v.body)
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | UInt32($1) }
        #expect(recordSize == 4096)
        let idLength = Int(body[20])
        #expect(idLength == 65)
        let asPublicBytes = Array(body[21..<(21 + idLength)])
        let encrypted = Array(body[(21 + idLength)...])

        let uaPrivate = try P256PrivateKey(rawRepresentation: try Self.b64(v.uaPrivate))
        let uaPublic = uaPrivate.publicKey.x963Representation
        #expect(uaPublic == (try Self.b64(v.uaPublic)))
        let asPublic = try P256PublicKey(x963Representation: asPublicBytes)
        let ecdhSecret = try uaPrivate.sharedSecret(with: asPublic)
        #expect(ecdhSecret == (try Self.b64(v.ecdhSecret)))
        let prkKey = HKDF.extract(salt: try Self.b64(v.authSecret), inputKeyMaterial: ecdhSecret)
        let ikm = try HKDF.expand(
            pseudoRandomKey: prkKey, info: Array("WebPush: info".utf8) + [0] + uaPublic + asPublicBytes, length: 32)
        let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
        let cek = try HKDF.expand(
            pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = try HKDF.expand(pseudoRandomKey: prk, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        let record = try AESGCM.open(encrypted, key: cek, nonce: nonce)
        #expect(record.last == 0x02)
        #expect(Array(record.dropLast()) == (try Self.b64(v.plaintext)))
        #expect(String(decoding: record.dropLast(), as: UTF8.self) == "When I grow up, I want to be a watermelon")

        var tampered = encrypted
        tampered[tampered.count - 1] ^= 1
        #expect(throws: CryptoError.self) { try AESGCM.open(tampered, key: cek, nonce: nonce) }
    }
}
