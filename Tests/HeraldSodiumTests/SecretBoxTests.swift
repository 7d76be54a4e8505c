import Foundation
import HeraldSodium
import Testing

/// The secretbox vectors of `ha-mobile-app.md` §6 (computed with PyNaCl 1.6.2 and re-checked with a
/// from-scratch HSalsa20/Salsa20 + Poly1305 implementation).
enum HAVector {
    static let secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    static let nonce = Array(UInt8(0)...UInt8(23))
    static let plaintext = Array(#"{"message":"hi"}"#.utf8)
    /// `nonce ‖ MAC ‖ ciphertext` under key = hex-decode(secret).
    static let current = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX2j89SqkOYGNscdx6iP92qrWi9I6LpLL3U8tedRHxGg8="
    /// The same under the legacy key (the secret's first 32 ASCII characters).
    static let legacy = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXjbtYyN/cypduf8lz7iTHTrcvA2EDAjDHQiSuA/ca20o="

    static var currentKey: [UInt8] {
        var out: [UInt8] = []
        var it = secret.utf8.makeIterator()
        while let hi = it.next(), let lo = it.next() {
            out.append(UInt8(String(decoding: [hi, lo], as: UTF8.self), radix: 16) ?? 0)
        }
        return out
    }
    static var legacyKey: [UInt8] { Array(secret.utf8.prefix(32)) }

    static func decode(_ b64: String) throws -> [UInt8] {
        guard let d = Data(base64Encoded: b64) else { throw VectorError() }
        return Array(d)
    }
    struct VectorError: Error {}
}

@Suite("SecretBox (libsodium crypto_secretbox)")
struct SecretBoxTests {
    @Test("Sizes match libsodium")
    func sizes() {
        #expect(SecretBox.keyLength == 32)
        #expect(SecretBox.nonceLength == 24)
        #expect(SecretBox.macLength == 16)
    }

    @Test("§6 vectors, current and legacy key, byte for byte", arguments: [true, false])
    func vectors(current: Bool) throws {
        let key = current ? HAVector.currentKey : HAVector.legacyKey
        let expected = try HAVector.decode(current ? HAVector.current : HAVector.legacy)
        #expect(key.count == 32)
        #expect(expected.count == 56)
        let box = try SecretBox.seal(HAVector.plaintext, key: key, nonce: HAVector.nonce)
        #expect(HAVector.nonce + box == expected)
        #expect(Array(expected.prefix(24)) == HAVector.nonce)
        let opened = try SecretBox.open(Array(expected.dropFirst(24)), key: key, nonce: HAVector.nonce)
        #expect(opened == HAVector.plaintext)
    }

    @Test("Round trip, including empty and large plaintexts")
    func roundTrip() throws {
        let key = Array(repeating: UInt8(7), count: 32)
        let nonce = Array(repeating: UInt8(9), count: 24)
        for size in [0, 1, 15, 16, 17, 1000, 65_537] {
            let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let box = try SecretBox.seal(plaintext, key: key, nonce: nonce)
            #expect(box.count == size + SecretBox.macLength)
            #expect(try SecretBox.open(box, key: key, nonce: nonce) == plaintext)
        }
    }

    @Test("Tampered MAC or ciphertext, wrong key and wrong nonce are refused")
    func tampering() throws {
        let box = Array(try HAVector.decode(HAVector.current).dropFirst(24))
        for index in [0, 15, 16, box.count - 1] {
            var bad = box
            bad[index] ^= 0x01
            #expect(throws: SodiumError.self) {
                try SecretBox.open(bad, key: HAVector.currentKey, nonce: HAVector.nonce)
            }
        }
        do {
            _ = try SecretBox.open(box, key: HAVector.legacyKey, nonce: HAVector.nonce)
            Issue.record("wrong key accepted")
        } catch {
            #expect(error.code == .authenticationFailed)
            #expect(error.call == "crypto_secretbox_open_easy")
            #expect(error.description.contains("crypto_secretbox_open_easy"))
        }
        var nonce = HAVector.nonce
        nonce[23] ^= 0x80
        #expect(throws: SodiumError.self) { try SecretBox.open(box, key: HAVector.currentKey, nonce: nonce) }
    }

    @Test("Short input and wrong key/nonce lengths are refused with the call named")
    func lengths() throws {
        let key = HAVector.currentKey
        let nonce = HAVector.nonce
        for short in [[], [UInt8](repeating: 0, count: 15)] {
            do {
                _ = try SecretBox.open(short, key: key, nonce: nonce)
                Issue.record("short box accepted")
            } catch {
                #expect(error.code == .invalidInput)
                #expect(error.call == "crypto_secretbox_open_easy")
            }
        }
        #expect(throws: SodiumError.self) {
            try SecretBox.open([UInt8](repeating: 0, count: 16), key: key, nonce: nonce)
        }
        do {
            _ = try SecretBox.seal([1], key: Array(key.prefix(31)), nonce: nonce)
            Issue.record("short key accepted")
        } catch {
            #expect(error.code == .invalidKey)
            #expect(error.call == "crypto_secretbox_easy")
        }
        do {
            _ = try SecretBox.seal([1], key: key, nonce: Array(nonce.prefix(12)))
            Issue.record("short nonce accepted")
        } catch {
            #expect(error.code == .invalidNonce)
        }
        #expect(throws: SodiumError.self) { try SecretBox.open(Array(repeating: 0, count: 32), key: [], nonce: nonce) }
    }

    @Test("Concurrent first use initialises libsodium once and works")
    func concurrent() async throws {
        let key = HAVector.currentKey
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<16 {
                group.addTask {
                    let nonce = Array(repeating: UInt8(i), count: 24)
                    guard let box = try? SecretBox.seal([UInt8(i)], key: key, nonce: nonce) else { return false }
                    return (try? SecretBox.open(box, key: key, nonce: nonce)) == [UInt8(i)]
                }
            }
            var all: [Bool] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.count == 16 && results.allSatisfy { $0 })
    }
}
