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
    static func namesEqual(_ a: String, _ b: String) -> Bool {
        let ua = a.utf8
        let ub = b.utf8
        if ua.count == ub.count {
            var equal = true
            var ascii = true
            for (x, y) in zip(ua, ub) {
                if (x | y) >= 0x80 {
                    ascii = false
                    break
                }
                if equal && asciiLower(x) != asciiLower(y) { equal = false }
            }
            if ascii { return equal }
        } else if isASCII(a) && isASCII(b) {
            return false
        }
        return a.lowercased() == b.lowercased()
    }

    @inline(__always)
    static func asciiLower(_ byte: UInt8) -> UInt8 { byte &- 65 < 26 ? byte | 0x20 : byte }

    static func isASCII(_ text: String) -> Bool { !text.utf8.contains { $0 >= 0x80 } }
}
