/// A JSON value as Herald reads and writes it.
///
/// Numbers are kept as `Double` (every integer Herald handles fits in 53 bits); the writer
/// prints integral values without a fraction, as JavaScript does.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object. Member order is not significant.
    case object([String: JSONValue])

    /// The string payload, if this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The number payload, if this is a number.
    public var numberValue: Double? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The number as an integer, if this is a number with no fractional part that fits `Int`.
    public var intValue: Int? {
        guard case .number(let n) = self, n.rounded() == n, abs(n) < 9.007_199_254_740_992e15 else { return nil }
        return Int(n)
    }

    /// The boolean payload, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Member lookup on an object; `nil` for other kinds or a missing member.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }

    /// A short name of the kind, for error messages ("string", "object", …).
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// Parses UTF-8 JSON text.
    public static func parse(_ text: String) throws(JSONError) -> JSONValue {
        try JSONParser.parse(Array(text.utf8))
    }

    /// Parses UTF-8 JSON bytes.
    public static func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        try JSONParser.parse(bytes)
    }

    /// Canonical serialisation: keys sorted by UTF-16 code units, no whitespace, escaping as JavaScript's
    /// `JSON.stringify` does. Byte-identical to `JSON.stringify` of a recursively key-sorted value.
    public var canonicalString: String {
        JSONWriter.canonical(self)
    }

    /// Canonical serialisation as UTF-8 bytes (see ``canonicalString``).
    public var canonicalBytes: [UInt8] {
        JSONWriter.canonicalBytes(self)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    /// A string literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer literal.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A float literal.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A boolean literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array literal.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A dictionary literal; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `nil` is `null`.
    public init(nilLiteral: ()) { self = .null }
}

/// A JSON syntax error with the byte offset where it was found.
public struct JSONError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// Byte offset into the input.
    public let offset: Int

    /// "invalid JSON at byte N: message".
    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}
