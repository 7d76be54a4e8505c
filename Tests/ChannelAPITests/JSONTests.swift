import ChannelAPI
import Foundation
import Testing

@Suite struct JSONTests {
    @Test func parsesAndRejects() throws {
        let v = try JSONValue.parse(#"{"a":[1,2.5,-3e2,true,false,null],"b":{"c":"\u00e9\ud83d\ude00\n"}}"#)
        #expect(v["a"]?.arrayValue?.count == 6)
        #expect(v["a"]?.arrayValue?[2] == .number(-300))
        #expect(v["b"]?["c"] == .string("é😀\n"))
        for bad in [#"{"a":1,"a":2}"#, "[1,]", "{", #""\ud800""#, "01", "1 2", #"{"a" 1}"#, "\"\u{01}\"", "nul", ""] {
            #expect(throws: JSONError.self, "\(bad)") { try JSONValue.parse(bad) }
        }
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: JSONError.self) { try JSONValue.parse(deep) }
    }

    /// Canonical JSON must equal JavaScript's JSON.stringify of the key-sorted value, byte for byte.
    /// Expected strings below were written from the ECMAScript JSON.stringify rules (QuoteJSONString):
    /// `/` and U+2028/U+2029 unescaped, non-ASCII verbatim, \b \f \n \r \t short escapes, other
    /// control characters as lowercase \u00xx.
    @Test func canonicalMatchesJSONStringify() {
        let value: JSONValue = [
            "z": "a/b", "a": "emoji 😀 é", "m": "line\u{2028}sep\u{2029}",
            "c": "\u{01}\u{1f}\u{7f}\t\n\r\u{08}\u{0c}\"\\",
            "n": ["b": 1, "a": [2.5, 0, -0.0, 1e21, 100]], "t": true, "u": .null,
        ]
        let expected =
            #"{"a":"emoji 😀 é","c":"\u0001\u001f"# + "\u{7f}" + #"\t\n\r\b\f\"\\","m":"line"# + "\u{2028}sep\u{2029}"
            + #"","n":{"a":[2.5,0,0,1e+21,100],"b":1},"t":true,"u":null,"z":"a/b"}"#
        #expect(value.canonicalString == expected)
    }

    @Test func keysSortByUTF16CodeUnits() {
        // "\u{E000}" (one UTF-16 unit, 0xE000) sorts after "😀" (surrogates 0xD83D…) in JavaScript,
        // though its code point is smaller.
        let value: JSONValue = ["\u{E000}": 1, "😀": 2, "b": 3, "B": 4]
        #expect(value.canonicalString == "{\"B\":4,\"b\":3,\"😀\":2,\"\u{E000}\":1}")
    }

    /// Numbers and strings as Foundation's `JSONSerialization` (an independent parser) reads them:
    /// the integer fast path, the text path (fractions, exponents, more than 15 digits), and strings
    /// mixing ASCII runs, escapes and multi-byte characters.
    @Test func numbersAndStringsMatchJSONSerialization() throws {
        let numbers = [
            "0", "-0", "7", "-42", "999999999999999", "-999999999999999", "1234567890123456", "12345678901234567890",
            "1.5", "-0.25", "1e3", "2E-2", "1.7976931348623157e308", "0.1", "100000000000000000000000",
        ]
        for text in numbers {
            let ours = try JSONValue.parse("[\(text)]").arrayValue?.first
            let theirs = try JSONSerialization.jsonObject(with: Data("[\(text)]".utf8)) as? [NSNumber]
            let expected = try #require(theirs?.first?.doubleValue, "\(text)")
            #expect(ours == .number(expected), "\(text)")
        }
        // `-0` is negative zero, as JavaScript's JSON.parse reads it (Foundation reads an integer 0).
        #expect(try JSONValue.parse("-0").numberValue?.sign == .minus)
        let strings = [
            #""plain ascii""#, #""caf\u00e9 and é""#, #""tab\there \"quoted\" \\ end""#, #""😀 mid 😀""#,
            #""\ud83d\ude00x""#, #""ünïcödé, then ascii, then \n""#, #""""#,
        ]
        for text in strings {
            let ours = try JSONValue.parse("[\(text)]").arrayValue?.first?.stringValue
            let theirs = try JSONSerialization.jsonObject(with: Data("[\(text)]".utf8)) as? [String]
            #expect(ours == theirs?.first, "\(text)")
        }
        // Invalid UTF-8 inside a string is refused wherever it sits: alone, after an escape, after ASCII.
        for bytes: [UInt8] in [
            [0x22, 0xFF, 0x22], [0x22, 0x5C, 0x6E, 0xC3, 0x22], [0x22, 0x61, 0x62, 0xE2, 0x82, 0x22],
        ] {
            #expect(throws: JSONError.self, "\(bytes)") { try JSONValue.parse(bytes) }
        }
        // Literals: only the exact words.
        for bad in ["tru", "nul", "fals", "truex", "nulll", "[t]"] {
            #expect(throws: JSONError.self, "\(bad)") { try JSONValue.parse(bad) }
        }
        #expect(try JSONValue.parse(" [ true , false , null ] ") == [true, false, nil])
        // A duplicate key is still refused, at the second key's offset.
        let duplicate = #expect(throws: JSONError.self) { try JSONValue.parse(#"{"a":1, "a":{"b":2}}"#) }
        #expect(duplicate?.offset == 8 && duplicate?.message.contains("duplicate key") == true)
    }

    @Test func roundTripsThroughParser() throws {
        let value: JSONValue = ["k": ["x": [1, "two", nil, false]], "s": "q\"uote"]
        #expect(try JSONValue.parse(value.canonicalString) == value)
    }
}
