import HeraldCrypto
import Testing

/// `Hex`: lower-case, two digits per byte, no separator; checked against vectors written out by hand
/// and FIPS 180-2's SHA-256 of "abc" (appendix B.1), not against another encoder of this codebase.
@Suite struct HexTests {
    @Test func everyNibbleAndTheEdges() {
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.encode([0x00, 0x0F, 0xF0, 0xFF, 0xAB, 0x01, 0x23, 0x45, 0x67, 0x89]) == "000ff0ffab0123456789")
        #expect(Hex.encode(ArraySlice([0xCD, 0xEF]).dropFirst()) == "ef")
        var out = Array("x:".utf8)
        Hex.append([0xDE, 0xAD], to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x:dead")
    }

    @Test func decodeTakesTwoDigitsPerByteAndRefusesTheRest() {
        #expect(Hex.decode("") == [])
        #expect(Hex.decode("000ff0ffab0123456789") == [0x00, 0x0F, 0xF0, 0xFF, 0xAB, 0x01, 0x23, 0x45, 0x67, 0x89])
        #expect(Hex.decode("DEADbeef") == [0xDE, 0xAD, 0xBE, 0xEF])
        #expect(Hex.decode("DEAD", lowerCaseOnly: true) == nil)
        #expect(Hex.decode("dead", lowerCaseOnly: true) == [0xDE, 0xAD])
        for bad in ["abc", "0g", "zz", " 00", "0x00", "é0"] { #expect(Hex.decode(bad) == nil, "\(bad)") }
    }

    @Test func sha256OfABCAsFIPS180Prints() {
        #expect(
            Hex.encode(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
