/// Serialises ``JSONValue`` the way JavaScript's `JSON.stringify` does, with object keys sorted by
/// UTF-16 code units (JavaScript's default sort). This is the byte contract of hapi's canonical JSON.
///
/// It writes UTF-8 bytes into one buffer: a Swift string is valid UTF-8 (no lone surrogates), so
/// escaping works on bytes, and every byte from 0x20 up except `"` and `\` is copied as it is.
enum JSONWriter {
    static func canonical(_ value: JSONValue) -> String {
        String(decoding: canonicalBytes(value), as: UTF8.self)
    }

    static func canonicalBytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(value, into: &out)
        return out
    }

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): out.append(contentsOf: formatNumber(n).utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            for (key, v) in members.sorted(by: { utf16Precedes($0.key, $1.key) }) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(v, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Whether `a` sorts before `b` by UTF-16 code units, compared on their UTF-8 bytes. Byte order
    /// is code point order, which is UTF-16 order except between a supplementary code point (lead
    /// byte 0xF0 or above; a surrogate pair, 0xD800…) and one in U+E000…U+FFFF (lead 0xEE or 0xEF):
    /// there UTF-16 puts the supplementary one first. Equal lead bytes keep both in the same range.
    static func utf16Precedes(_ a: String, _ b: String) -> Bool {
        var i = a.utf8.makeIterator()
        var j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return false
            case (nil, _): return true
            case (_, nil): return false
            case (let x?, let y?):
                if x == y { continue }
                if x >= 0xF0 && (y == 0xEE || y == 0xEF) { return true }
                if y >= 0xF0 && (x == 0xEE || x == 0xEF) { return false }
                return x < y
            }
        }
    }

    /// Integral values within 2^53 print without a fraction, like JavaScript; NaN/Infinity become null.
    static func formatNumber(_ n: Double) -> String {
        guard n.isFinite else { return "null" }
        if n.rounded() == n, abs(n) < 1e21 {
            if n == 0 { return "0" }
            if abs(n) < 9.007_199_254_740_992e15 { return String(Int64(n)) }
        }
        return "\(n)"
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// JSON.stringify escaping: `"` and `\`, the short escapes for \b \f \n \r \t, other control
    /// characters as lowercase \u00XX; `/`, U+2028/2029 and non-ASCII verbatim.
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escape: copy their bytes at once.
        if s.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(contentsOf: s.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)],
                ])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
