import HeraldCrypto
import Testing

private struct HKDFFile: Decodable {
    struct Case: Decodable {
        var name: String
        var ikmHex: String
        var saltHex: String
        var infoHex: String
        var length: Int
        var prkHex: String
        var okmHex: String
    }
    var cases: [Case]
}

@Suite("HKDF-SHA-256")
struct HKDFTests {
    @Test("RFC 5869 test cases 1-3")
    func rfc5869() throws {
        let file: HKDFFile = try Vectors.load("rfc5869-hkdf-sha256.json")
        #expect(file.cases.count == 3)
        for vector in file.cases {
            let ikm = try hex(vector.ikmHex)
            let salt = try hex(vector.saltHex)
            let info = try hex(vector.infoHex)
            let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
            #expect(hexString(prk) == vector.prkHex, "\(vector.name)")
            let okm = try HKDF.expand(pseudoRandomKey: prk, info: info, length: vector.length)
            #expect(hexString(okm) == vector.okmHex, "\(vector.name)")
            let derived = try HKDF.deriveKey(inputKeyMaterial: ikm, salt: salt, info: info, length: vector.length)
            #expect(derived == okm, "\(vector.name)")
        }
    }

    @Test("expand rejects bad lengths and short keys")
    func expandNegatives() {
        let prk = [UInt8](repeating: 7, count: 32)
        for length in [0, -1, 255 * 32 + 1] {
            #expect(throws: CryptoError.self) { try HKDF.expand(pseudoRandomKey: prk, info: [], length: length) }
        }
        #expect((try? HKDF.expand(pseudoRandomKey: prk, info: [], length: 255 * 32))?.count == 255 * 32)
        do {
            _ = try HKDF.expand(pseudoRandomKey: [1, 2, 3], info: [], length: 16)
            Issue.record("short PRK accepted")
        } catch {
            #expect(error.code == .invalidKey)
        }
    }

    @Test("OpenSSL's EVP_KDF HKDF (the measured alternative) gives the RFC 5869 test cases too")
    func rfc5869ThroughEVPKDF() throws {
        let file: HKDFFile = try Vectors.load("rfc5869-hkdf-sha256.json")
        for vector in file.cases {
            let prk = try EVPHKDF.extract(salt: try hex(vector.saltHex), inputKeyMaterial: try hex(vector.ikmHex))
            #expect(hexString(prk) == vector.prkHex, "\(vector.name)")
            let okm = try EVPHKDF.expand(pseudoRandomKey: prk, info: try hex(vector.infoHex), length: vector.length)
            #expect(hexString(okm) == vector.okmHex, "\(vector.name)")
        }
        #expect(throws: CryptoError.self) { try EVPHKDF.expand(pseudoRandomKey: [1, 2, 3], info: [], length: 16) }
        #expect(throws: CryptoError.self) {
            try EVPHKDF.expand(pseudoRandomKey: [UInt8](repeating: 7, count: 32), info: [], length: 255 * 32 + 1)
        }
    }
}
