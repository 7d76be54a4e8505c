import HeraldCrypto
import Testing

private struct GCMFile: Decodable {
    struct Case: Decodable {
        var name: String
        var keyHex: String
        var ivHex: String
        var plaintextHex: String
        var aadHex: String
        var ciphertextHex: String
        var tagHex: String
    }
    var cases: [Case]
}

private struct EnvelopeFixture: Decodable {
    var keyHex: String
    var nonceHex: String
    var aad: String
    var plaintext: String
    var envelopeB64: String
}

@Suite("AES-GCM")
struct AESGCMTests {
    @Test("GCM spec test cases 2, 3, 4 (AES-128) and 14, 15, 16 (AES-256)")
    func gcmSpec() throws {
        let file: GCMFile = try Vectors.load("gcm-spec.json")
        #expect(file.cases.count == 6)
        for vector in file.cases {
            let key = try hex(vector.keyHex)
            let nonce = try hex(vector.ivHex)
            let plaintext = try hex(vector.plaintextHex)
            let aad = try hex(vector.aadHex)
            let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, authenticating: aad)
            #expect(hexString(sealed) == vector.ciphertextHex + vector.tagHex, "\(vector.name)")
            let opened = try AESGCM.open(sealed, key: key, nonce: nonce, authenticating: aad)
            #expect(opened == plaintext, "\(vector.name)")
        }
    }

    @Test("hapi envelope v1 fixture: base64(nonce || ciphertext || tag) byte for byte")
    func hapiEnvelope() throws {
        let fixture: EnvelopeFixture = try Vectors.load("hapi-envelope-v1.json")
        let key = try hex(fixture.keyHex)
        let nonce = try hex(fixture.nonceHex)
        #expect(key.count == 32)
        let sealed = try AESGCM.seal(
            Array(fixture.plaintext.utf8), key: key, nonce: nonce, authenticating: Array(fixture.aad.utf8))
        #expect(Base64.encode(nonce + sealed) == fixture.envelopeB64)
        let envelope = try Base64.decode(fixture.envelopeB64)
        let opened = try AESGCM.open(
            Array(envelope[12...]), key: key, nonce: Array(envelope[..<12]), authenticating: Array(fixture.aad.utf8))
        #expect(opened == Array(fixture.plaintext.utf8))
    }

    @Test("empty plaintext round-trips")
    func emptyPlaintext() throws {
        let key = [UInt8](repeating: 1, count: 16)
        let nonce = [UInt8](repeating: 2, count: 12)
        let sealed = try AESGCM.seal([], key: key, nonce: nonce)
        #expect(sealed.count == 16)
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce).isEmpty)
    }

    @Test("negatives: wrong key, tampered tag/ciphertext/AAD, short input, bad nonce and key lengths")
    func negatives() throws {
        let key = [UInt8](repeating: 0x11, count: 16)
        let nonce = [UInt8](repeating: 0x22, count: 12)
        let plaintext: [UInt8] = Array("attack at dawn".utf8)
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, authenticating: [1, 2, 3])

        func expectCode(_ code: CryptoError.Code, _ body: () throws(CryptoError) -> [UInt8]) {
            do {
                _ = try body()
                Issue.record("expected \(code)")
            } catch {
                #expect(error.code == code, "\(error)")
            }
        }
        var wrongKey = key
        wrongKey[0] ^= 1
        expectCode(.authenticationFailed) { () throws(CryptoError) in
            try AESGCM.open(sealed, key: wrongKey, nonce: nonce, authenticating: [1, 2, 3])
        }
        var tamperedTag = sealed
        tamperedTag[tamperedTag.count - 1] ^= 0x80
        expectCode(.authenticationFailed) { () throws(CryptoError) in
            try AESGCM.open(tamperedTag, key: key, nonce: nonce, authenticating: [1, 2, 3])
        }
        var tamperedCiphertext = sealed
        tamperedCiphertext[0] ^= 1
        expectCode(.authenticationFailed) { () throws(CryptoError) in
            try AESGCM.open(tamperedCiphertext, key: key, nonce: nonce, authenticating: [1, 2, 3])
        }
        expectCode(.authenticationFailed) { () throws(CryptoError) in
            try AESGCM.open(sealed, key: key, nonce: nonce, authenticating: [1, 2, 4])
        }
        expectCode(.invalidInput) { () throws(CryptoError) in
            try AESGCM.open(Array(sealed.prefix(15)), key: key, nonce: nonce)
        }
        expectCode(.invalidInput) { () throws(CryptoError) in try AESGCM.open([], key: key, nonce: nonce) }
        for badNonce in [[UInt8](repeating: 0, count: 11), [UInt8](repeating: 0, count: 13), []] {
            expectCode(.invalidInput) { () throws(CryptoError) in try AESGCM.seal(plaintext, key: key, nonce: badNonce)
            }
            expectCode(.invalidInput) { () throws(CryptoError) in try AESGCM.open(sealed, key: key, nonce: badNonce) }
        }
        for badKey in [[UInt8](repeating: 0, count: 24), [UInt8](repeating: 0, count: 15), []] {
            expectCode(.invalidKey) { () throws(CryptoError) in try AESGCM.seal(plaintext, key: badKey, nonce: nonce) }
        }
    }

    @Test("authentication failure carries the C call and OpenSSL text")
    func errorDescription() throws {
        let key = [UInt8](repeating: 0x11, count: 32)
        let nonce = [UInt8](repeating: 0x22, count: 12)
        var sealed = try AESGCM.seal([1, 2, 3], key: key, nonce: nonce)
        sealed[0] ^= 1
        do {
            _ = try AESGCM.open(sealed, key: key, nonce: nonce)
            Issue.record("tampered message opened")
        } catch {
            #expect(error.code == .authenticationFailed)
            #expect(error.call == "EVP_DecryptFinal_ex")
            #expect(error.description.contains("EVP_DecryptFinal_ex"))
        }
    }
}
