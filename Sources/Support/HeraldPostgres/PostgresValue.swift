import HeraldSQL

/// A value bound to a statement parameter or read from a result column: HeraldSQL's shared value.
///
/// Parameters are sent in PostgreSQL's text format (the server converts them to the column type);
/// results are read in text format and typed by the column's type: `int2`/`int4`/`int8` become
/// ``integer(_:)``, `float4`/`float8`/`numeric` ``real(_:)``, `bool` ``bool(_:)``, `bytea`
/// ``bytes(_:)`` and everything else ``text(_:)``.
public typealias PostgresValue = SQLValue

extension SQLValue {
    /// The text-format parameter value, or nil for `NULL`.
    var parameterText: String? {
        switch self {
        case .null: return nil
        case .integer(let v): return String(v)
        case .real(let v): return "\(v)"
        case .bool(let v): return v ? "t" : "f"
        case .text(let v): return v
        case .bytes(let v): return SQLValue.hex(v)
        }
    }

    /// `\x` followed by lowercase hex digits: the `bytea` text input format.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        out.reserveCapacity(2 + bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes the `bytea` hex output format (`\x…`); nil when it is not that format.
    static func unhex<S: Collection>(_ text: S) -> [UInt8]? where S.Element == UInt8 {
        guard text.count >= 2, text.first == UInt8(ascii: "\\"), text.dropFirst().first == UInt8(ascii: "x")
        else { return nil }
        let digits = text.dropFirst(2)
        guard digits.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var high: UInt8?
        for c in digits {
            guard let n = nibble(c) else { return nil }
            if let h = high {
                out.append(h << 4 | n)
                high = nil
            } else {
                high = n
            }
        }
        return out
    }
}
