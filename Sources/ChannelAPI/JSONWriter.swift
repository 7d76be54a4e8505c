/// Serialises ``JSONValue`` the way JavaScript's `JSON.stringify` does, with object keys sorted by
/// UTF-16 code units (JavaScript's default sort). This is the byte contract of hapi's canonical JSON.
enum JSONWriter {
    static func canonical(_ value: JSONValue) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n): out += formatNumber(n)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            let keys = members.keys.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
            for (i, key) in keys.enumerated() {
                if i > 0 { out += "," }
                writeString(key, into: &out)
                out += ":"
                if let v = members[key] { write(v, into: &out) }
            }
            out += "}"
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

    /// JSON.stringify escaping: `"` and `\`, the short escapes for \b \f \n \r \t, other control
    /// characters as lowercase \u00XX, lone surrogates as \uXXXX; `/`, U+2028/2029 and non-ASCII verbatim.
    static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
