/// Fast UUID strings from an injected random source (Foundation's `UUID()` costs several
/// microseconds each on Linux, which shows at 10,000 deliveries).
///
/// ``make(_:random:)`` gives random version-4 UUIDs; ``makeTimeOrdered(_:at:random:)`` gives RFC 9562
/// version-7 UUIDs (a millisecond timestamp, then random bits), which keep a B-tree index on them
/// append-mostly.
public enum UUIDGenerator {
    static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `count` lowercase UUID strings (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
    public static func make(_ count: Int, random: any RandomSource) -> [String] {
        guard count > 0 else { return [] }
        let bytes = random.bytes(count * 16)
        var out: [String] = []
        out.reserveCapacity(count)
        for i in 0..<count {
            var b = Array(bytes[(i * 16)..<(i * 16 + 16)])
            b[6] = (b[6] & 0x0F) | 0x40
            b[8] = (b[8] & 0x3F) | 0x80
            out.append(format(b))
        }
        return out
    }

    /// `count` version-7 UUID strings for the millisecond `millis`, in increasing order.
    public static func makeTimeOrdered(_ count: Int, at millis: Int64, random: any RandomSource) -> [String] {
        guard count > 0 else { return [] }
        let bytes = random.bytes(count * 10)
        var out: [String] = []
        out.reserveCapacity(count)
        let ms = UInt64(max(0, millis))
        for i in 0..<count {
            var b = [UInt8](repeating: 0, count: 16)
            for k in 0..<6 { b[k] = UInt8((ms >> (8 * UInt64(5 - k))) & 0xFF) }
            // 12 bits of sequence keep the ids of one batch in order: version 7, then the counter.
            let seq = UInt16(i & 0x0FFF)
            b[6] = 0x70 | UInt8(seq >> 8)
            b[7] = UInt8(seq & 0xFF)
            for k in 8..<16 { b[k] = bytes[i * 10 + (k - 8)] }
            b[8] = (b[8] & 0x3F) | 0x80
            out.append(format(b))
        }
        return out
    }

    /// A series of version-7 UUIDs for the millisecond `millis` that a database can number itself:
    /// member `k` is `prefix` followed by the 12 hex digits of `(base + k) mod 2^48`, so distinct
    /// `k` below 2^48 give distinct ids (SQLite numbers them by a device's `rowid`, PostgreSQL by
    /// `row_number()`; consecutive `k` make RFC 9562 §6.2's method 2, a random value incremented per
    /// id). The first 20 hex digits (timestamp, version, 12 random bits, variant and 14 random bits)
    /// are shared, and 74 random bits in all separate one series from another of the same millisecond.
    /// - Returns: `prefix`, 24 characters (`tttttttt-tttt-7xxx-yxxx-`), and `base`, below 2^48.
    public static func timeOrderedSeries(at millis: Int64, random: any RandomSource) -> (prefix: String, base: Int64) {
        let r = random.bytes(10)
        let ms = UInt64(max(0, millis))
        var b = [UInt8](repeating: 0, count: 16)
        for k in 0..<6 { b[k] = UInt8((ms >> (8 * UInt64(5 - k))) & 0xFF) }
        b[6] = 0x70 | (r[0] & 0x0F)
        b[7] = r[1]
        b[8] = (r[2] & 0x3F) | 0x80
        b[9] = r[3]
        let formatted = format(b)
        var base: Int64 = 0
        for k in 4..<10 { base = (base << 8) | Int64(r[k]) }
        return (String(formatted.prefix(24)), base)
    }

    /// Member `k` of a series from ``timeOrderedSeries(at:random:)``.
    public static func seriesMember(prefix: String, base: Int64, _ k: Int64) -> String {
        let value = UInt64(bitPattern: base &+ k) & 0xFFFF_FFFF_FFFF
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: 12)
        for i in 0..<12 { digits[11 - i] = hex[Int((value >> (4 * UInt64(i))) & 0xF)] }
        return prefix + String(decoding: digits, as: UTF8.self)
    }

    /// One UUID string.
    public static func make(random: any RandomSource) -> String { make(1, random: random)[0] }

    /// Formats 16 bytes as a canonical UUID string: `8-4-4-4-12` lower-case hex digits (RFC 9562
    /// §4, the form APNs requires for `apns-id`).
    /// - Parameter b: The 16 bytes, version and variant bits already set.
    /// - Returns: The 36-character string.
    public static func format(_ b: [UInt8]) -> String {
        let digits = hex
        var chars = [UInt8]()
        chars.reserveCapacity(36)
        for (i, byte) in b.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { chars.append(UInt8(ascii: "-")) }
            chars.append(digits[Int(byte >> 4)])
            chars.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: chars, as: UTF8.self)
    }
}
