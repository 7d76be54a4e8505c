import HeraldCrypto
import Testing

private struct HMACFile: Decodable {
    struct Case: Decodable {
        var name: String
        var keyHex: String
        var dataHex: String
        var macHex: String
        var truncateBytes: Int
    }
    var cases: [Case]
}

@Suite("HMAC-SHA-256 and SHA-256")
struct HMACSHA256Tests {
    @Test("RFC 4231 test cases 1-7")
    func rfc4231() throws {
        let file: HMACFile = try Vectors.load("rfc4231-hmac-sha256.json")
        #expect(file.cases.count == 7)
        for vector in file.cases {
            let key = try hex(vector.keyHex)
            let data = try hex(vector.dataHex)
            let mac = HMACSHA256.authenticationCode(key: key, message: data)
            #expect(mac.count == 32, "\(vector.name)")
            #expect(hexString(Array(mac.prefix(vector.truncateBytes))) == vector.macHex, "\(vector.name)")
            if vector.truncateBytes == 32 {
                #expect(HMACSHA256.isValid(mac, key: key, message: data), "\(vector.name)")
            } else {
                // Truncated MACs (case 5) are never accepted by isValid.
                #expect(!HMACSHA256.isValid(Array(mac.prefix(vector.truncateBytes)), key: key, message: data))
            }
        }
    }

    @Test("isValid rejects a wrong key, a flipped bit and a wrong message")
    func isValidNegatives() {
        let key: [UInt8] = Array("Jefe".utf8)
        let message: [UInt8] = Array("what do ya want for nothing?".utf8)
        var mac = HMACSHA256.authenticationCode(key: key, message: message)
        #expect(HMACSHA256.isValid(mac, key: key, message: message))
        #expect(!HMACSHA256.isValid(mac, key: Array("Jeff".utf8), message: message))
        #expect(!HMACSHA256.isValid(mac, key: key, message: message + [0]))
        mac[31] ^= 1
        #expect(!HMACSHA256.isValid(mac, key: key, message: message))
        #expect(!HMACSHA256.isValid([], key: key, message: message))
    }

    @Test("SHA-256 of \"abc\" and of the empty string (FIPS 180-2 examples)")
    func sha256() {
        #expect(
            hexString(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            hexString(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("ConstantTime.equals")
    func constantTime() {
        #expect(ConstantTime.equals([], []))
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
    }

    @Test("SecureRandom returns the requested count and differs between calls")
    func secureRandom() {
        #expect(SecureRandom.bytes(0).isEmpty)
        #expect(SecureRandom.bytes(-1).isEmpty)
        let a = SecureRandom.bytes(32)
        let b = SecureRandom.bytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
    }
}
