import HeraldCrypto
import Testing

private struct HKDFFile: Decodable {
    struct Case: Decodable {
        var name: String
        var ikm_hex: String
        var salt_hex: String
        var info_hex: String
        var length: Int
        var prk_hex: String
        var okm_hex: String
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
            let ikm = try hex(vector.ikm_hex)
            let salt = try hex(vector.salt_hex)
            let info = try hex(vector.info_hex)
            let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
            #expect(hexString(prk) == vector.prk_hex, "\(vector.name)")
            let okm = try HKDF.expand(pseudoRandomKey: prk, info: info, length: vector.length)
            #expect(hexString(okm) == vector.okm_hex, "\(vector.name)")
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
}
