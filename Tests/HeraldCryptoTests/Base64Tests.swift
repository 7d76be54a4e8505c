import HeraldCrypto
import Testing

@Suite("Base64")
struct Base64Tests {
    /// RFC 4648 §10 test vectors.
    static let rfc4648: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test("RFC 4648 §10 vectors, padded and unpadded")
    func rfc4648Vectors() throws {
        for (plain, encoded) in Self.rfc4648 {
            let bytes = Array(plain.utf8)
            #expect(Base64.encode(bytes) == encoded)
            #expect(try Base64.decode(encoded) == bytes)
            let unpadded = String(encoded.filter { $0 != "=" })
            #expect(Base64.urlEncode(bytes) == unpadded)
            #expect(try Base64.urlDecode(unpadded) == bytes)
            #expect(try Base64.urlDecode(encoded) == bytes)
            #expect(try Base64.decodeEitherAlphabet(unpadded) == bytes)
            #expect(try Base64.decodeEitherAlphabet(encoded) == bytes)
        }
    }

    @Test("alphabets: + / versus - _")
    func alphabets() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.urlEncode(bytes) == "-_-_")
        #expect(try Base64.decode("+/+/") == bytes)
        #expect(try Base64.urlDecode("-_-_") == bytes)
        #expect(try Base64.decodeEitherAlphabet("+/+/") == bytes)
        #expect(try Base64.decodeEitherAlphabet("-_-_") == bytes)
        for (text, decoder) in [("-_-_", 0), ("+/+/", 1), ("+/-_", 2)] {
            do {
                switch decoder {
                case 0: _ = try Base64.decode(text)
                case 1: _ = try Base64.urlDecode(text)
                default: _ = try Base64.decodeEitherAlphabet(text)
                }
                Issue.record("\(text) accepted by decoder \(decoder)")
            } catch {
                #expect(error.code == .invalidBase64)
            }
        }
    }

    @Test("strict decoding rejects bad characters, bad padding, whitespace and non-zero trailing bits")
    func negatives() {
        let badStandard = [
            "Zg", "Zg=", "Zg===", "Zm8", "Zm9v=", "Z===", "=", "====", "Zm9v\n", " Zm9v", "Zm 9v", "Zm9v\r\n",
            "Zh==", "Zm9=", "Zm*v", "Zm9vYg==Zg==", "Zg=a", "Zm9vYg=\u{00E9}",
        ]
        for text in badStandard {
            #expect(throws: CryptoError.self, "\(text)") { try Base64.decode(text) }
        }
        let badURL = ["Z", "Zg=", "Zg===", "Zh", "Zm9", "Zm+v", "Zm/v", "Zm9v ", "Zm\t9v", "Zm9v=", "a"]
        for text in badURL {
            #expect(throws: CryptoError.self, "\(text)") { try Base64.urlDecode(text) }
        }
        for text in ["Zg=", "Zh", "Zm9 v", "Zm9v*", "a"] {
            #expect(throws: CryptoError.self, "\(text)") { try Base64.decodeEitherAlphabet(text) }
        }
    }

    @Test("round trip of every length 0...64 with random bytes")
    func roundTrip() throws {
        for length in 0...64 {
            let bytes = SecureRandom.bytes(length)
            #expect(try Base64.decode(Base64.encode(bytes)) == bytes)
            #expect(try Base64.urlDecode(Base64.urlEncode(bytes)) == bytes)
        }
    }
}
