import ChannelAPI
import Foundation
import Testing

/// `JSONObjectWriter` writes the same bytes as a `JSONValue` object's canonical form, when its members
/// are added in canonical order; and JSONSerialization (an independent parser) reads them back.
@Suite struct JSONObjectWriterTests {
    /// Strings that need every kind of escape, and text that needs none.
    static let samples = [
        "", "plain", "quote \" and \\ backslash", "line\nbreak\ttab\r\u{08}\u{0C}", "ctl \u{01}\u{1F}",
        "é ✓ 🙂 \u{2028}", "/slash/",
    ]

    @Test func bytesAreTheCanonicalBytesOfTheSameObject() throws {
        for (i, s) in Self.samples.enumerated() {
            var w = JSONObjectWriter()
            w.add("attempt", i)
            w.add("channel", s)
            w.add("deviceId", nil as String?)
            w.add("done", i % 2 == 0)
            w.add("negative", -i)
            w.add("reason", s + "!")
            let expected: JSONValue = .object([
                "attempt": .number(Double(i)), "channel": .string(s), "done": .bool(i % 2 == 0),
                "negative": .number(Double(-i)), "reason": .string(s + "!"),
            ])
            #expect(w.bytes == expected.canonicalBytes)
            #expect(w.text == expected.canonicalString)
            let parsed = try #require(
                try JSONSerialization.jsonObject(with: Data(w.bytes)) as? [String: Any])
            #expect(parsed["channel"] as? String == s)
            #expect(parsed["attempt"] as? Int == i)
            #expect(parsed["deviceId"] == nil)
        }
    }

    @Test func anEmptyObjectAndAppendingToABuffer() {
        #expect(JSONObjectWriter().text == "{}")
        var w = JSONObjectWriter()
        w.add("a", 1)
        var buffer = Array("[".utf8)
        w.write(into: &buffer)
        w.write(into: &buffer)
        #expect(String(decoding: buffer, as: UTF8.self) == #"[{"a":1}{"a":1}"#)
    }
}
