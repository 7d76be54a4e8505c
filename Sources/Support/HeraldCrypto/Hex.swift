/// Lower-case hexadecimal, through a 16-entry table (no formatter, one allocation per string).
public enum Hex {
    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// `bytes` as lower-case hex: two digits per byte, no separator.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = digits[Int(b >> 4)]
                out[i + 1] = digits[Int(b & 0x0F)]
                i += 2
            }
            return i
        }
    }

    /// Appends `bytes` as lower-case hex to `out`.
    public static func append(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        out.reserveCapacity(out.count + bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
    }
}
