/// Lower-case hexadecimal out, through a 16-entry table (no formatter, one allocation per string).
/// Inlinable, so callers in other modules get it specialized for their collection type.
public enum Hex {
    @usableFromInline static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `bytes` as lower-case hex: two digits per byte, no separator.
    @inlinable
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let table = digits
        return String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = table[Int(b >> 4)]
                out[i + 1] = table[Int(b & 0x0F)]
                i += 2
            }
            return i
        }
    }

    /// Appends `bytes` as lower-case hex to `out`.
    @inlinable
    public static func append(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        let table = digits
        out.reserveCapacity(out.count + bytes.count * 2)
        for b in bytes {
            out.append(table[Int(b >> 4)])
            out.append(table[Int(b & 0x0F)])
        }
    }

    /// The bytes of `hex` (two digits per byte, no separator); nil for an odd length or any other
    /// character. Upper-case digits are taken unless `lowerCaseOnly` (a caller that must give the same
    /// text back from ``encode(_:)``).
    public static func decode(_ hex: String, lowerCaseOnly: Bool = false) -> [UInt8]? {
        var hex = hex
        return hex.withUTF8 { u -> [UInt8]? in
            guard u.count % 2 == 0 else { return nil }
            func nibble(_ c: UInt8) -> UInt8? {
                switch c {
                case 48...57: c &- 48
                case 97...102: c &- 87
                case 65...70 where !lowerCaseOnly: c &- 55
                default: nil
                }
            }
            var out = [UInt8](repeating: 0, count: u.count / 2)
            for i in 0..<out.count {
                guard let high = nibble(u[2 * i]), let low = nibble(u[2 * i + 1]) else { return nil }
                out[i] = high << 4 | low
            }
            return out
        }
    }
}
