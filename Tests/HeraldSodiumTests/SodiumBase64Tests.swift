import HeraldSodium
import Testing

/// libsodium's Base64 against RFC 4648: §10's vectors, both alphabets (§4, §5), strict decoding.
@Suite struct SodiumBase64Tests {
    static let rfc4648: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test func rfc4648VectorsPaddedAndUnpadded() throws {
        for (plain, encoded) in Self.rfc4648 {
            let bytes = Array(plain.utf8)
            let unpadded = String(encoded.filter { $0 != "=" })
            #expect(SodiumBase64.encode(bytes, variant: .original) == encoded)
            #expect(SodiumBase64.encode(bytes, variant: .urlSafeNoPadding) == unpadded)
            #expect(try SodiumBase64.decode(encoded, variant: .original) == bytes)
            #expect(try SodiumBase64.decode(encoded, variant: .urlSafe) == bytes)
            #expect(try SodiumBase64.decode(unpadded, variant: .urlSafeNoPadding) == bytes)
            #expect(try SodiumBase64.decode(unpadded, variant: .originalNoPadding) == bytes)
        }
    }

    @Test func alphabetsAreNotMixed() throws {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(SodiumBase64.encode(bytes, variant: .original) == "+/+/")
        #expect(SodiumBase64.encode(bytes, variant: .urlSafe) == "-_-_")
        #expect(try SodiumBase64.decode("-_-_", variant: .urlSafe) == bytes)
        #expect(throws: SodiumError.self) { try SodiumBase64.decode("-_-_", variant: .original) }
        #expect(throws: SodiumError.self) { try SodiumBase64.decode("+/+/", variant: .urlSafeNoPadding) }
    }

    @Test(arguments: [
        "Zg", "Zg=", "Zg===", "Zm8", "Zm9v=", "Z===", "=", "====", "Zm9v\n", " Zm9v", "Zm 9v", "Zh==", "Zm9=",
        "Zm*v", "Zm9vYg==Zg==", "Zg=a",
    ])
    func strictStandardDecodingRejects(_ text: String) {
        #expect(throws: SodiumError.self) { try SodiumBase64.decode(text, variant: .original) }
    }

    @Test(arguments: ["Z", "Zg=", "Zh", "Zm9", "Zm+v", "Zm9v ", "Zm9v=", "a"])
    func strictUnpaddedURLDecodingRejects(_ text: String) {
        #expect(throws: SodiumError.self) { try SodiumBase64.decode(text, variant: .urlSafeNoPadding) }
    }

    @Test func roundTripsEveryLength() throws {
        for length in 0...70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 5) }
            for variant in [SodiumBase64.Variant.original, .originalNoPadding, .urlSafe, .urlSafeNoPadding] {
                #expect(
                    try SodiumBase64.decode(SodiumBase64.encode(bytes, variant: variant), variant: variant) == bytes)
            }
        }
    }
}
