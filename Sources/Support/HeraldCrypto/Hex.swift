/// Lower-case hexadecimal, through a 16-entry table (no formatter, one allocation per string).
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
}
