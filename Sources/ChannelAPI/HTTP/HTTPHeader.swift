/// One HTTP header field: a name and a value.
///
/// Names are kept as given; lookups through ``HTTPResponse/header(_:)`` are case-insensitive.
public struct HTTPHeader: Sendable, Hashable {
    /// The field name, for example `content-type`.
    public var name: String
    /// The field value, without surrounding whitespace.
    public var value: String

    /// Creates a header field.
    /// - Parameters:
    ///   - name: The field name.
    ///   - value: The field value.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

extension HTTPHeader {
    /// Whether `a` and `b` are equal after `lowercased()`, without allocating when both are ASCII
    /// (header names practically always are); other strings take the `lowercased()` comparison.
    /// Inlinable: HeraldHTTP calls it for every received header line.
    @inlinable
    public static func namesEqual(_ a: String, _ b: String) -> Bool {
        let fast: Bool?? = a.utf8.withContiguousStorageIfAvailable { ua in
            b.utf8.withContiguousStorageIfAvailable { ub in asciiNamesEqual(ua, ub) } ?? nil
        }
        if let fast, let answer = fast { return answer }
        return a.lowercased() == b.lowercased()
    }

    /// `a == b` ignoring ASCII case, or `nil` when either holds a non-ASCII byte (then only Unicode
    /// lowercasing can tell).
    @usableFromInline
    static func asciiNamesEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool? {
        if a.count != b.count {
            for x in a where x >= 0x80 { return nil }
            for y in b where y >= 0x80 { return nil }
            return false
        }
        var equal = true
        for i in 0..<a.count {
            let x = a[i]
            let y = b[i]
            if (x | y) >= 0x80 { return nil }
            if equal && asciiLower(x) != asciiLower(y) { equal = false }
        }
        return equal
    }

    @inline(__always) @usableFromInline
    static func asciiLower(_ byte: UInt8) -> UInt8 { byte &- 65 < 26 ? byte | 0x20 : byte }

}
