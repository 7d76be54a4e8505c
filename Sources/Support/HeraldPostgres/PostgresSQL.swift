/// One PostgreSQL statement (or a fragment of one) with the values bound to its parameters.
///
/// Written like HeraldSQLite's `SQL`: a string literal with interpolated values. Each `\(value)`
/// becomes the next `$n` parameter and its value is sent separately (`PQexecParams`), never
/// spliced into the text, so a value holding quotes or SQL cannot change the statement:
///
/// ```swift
/// try connection.run("UPDATE deliveries SET state = \(state) WHERE id = \(id)")
/// ```
///
/// `\(textArray: ids)` binds one `text[]` parameter (for `= ANY(…)` and `unnest(…)`), so a batch
/// of any size is one statement with one parameter. Interpolating another `PostgresSQL` embeds its
/// text and its values, renumbering its parameters. Only literals are SQL text: text made at run
/// time cannot become a `PostgresSQL` value.
public struct PostgresSQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The pieces: literal text, and a marker for each parameter (numbered when the text is built).
    private var parts: [Part]
    /// The values bound to the parameters, in order.
    public private(set) var bindings: [PostgresValue]

    enum Part: Sendable, Hashable {
        case literal(String)
        case parameter
    }

    /// SQL text without bound values, taken as written.
    public init(stringLiteral value: StaticString) {
        parts = [.literal(value.withUTF8Buffer { String(decoding: $0, as: UTF8.self) })]
        bindings = []
    }

    /// SQL built by interpolation: literal parts are text, interpolated values are bound.
    public init(stringInterpolation: Interpolation) {
        parts = stringInterpolation.parts
        bindings = stringInterpolation.bindings
    }

    /// An empty fragment, to append to.
    public init() {
        parts = []
        bindings = []
    }

    /// Appends `other`'s text and bindings (for statements built in a loop).
    public mutating func append(_ other: PostgresSQL) {
        parts += other.parts
        bindings += other.bindings
    }

    /// The statement text, with `$1`, `$2`, … for the bound values in order.
    public var text: String {
        var out = ""
        var n = 0
        for part in parts {
            switch part {
            case .literal(let s): out += s
            case .parameter:
                n += 1
                out += "$\(n)"
            }
        }
        return out
    }

    /// `true` when there is no text.
    public var isEmpty: Bool { parts.isEmpty }

    /// The text and the number of bound values; never the values, which may be secret.
    public var description: String { "\(text) [\(bindings.count) bound]" }

    /// Builds ``PostgresSQL`` from string interpolation; see ``PostgresSQL``.
    public struct Interpolation: StringInterpolationProtocol {
        var parts: [Part] = []
        var bindings: [PostgresValue] = []

        /// Creates an empty interpolation (called by the compiler).
        public init(literalCapacity: Int, interpolationCount: Int) {
            parts.reserveCapacity(interpolationCount * 2 + 1)
            bindings.reserveCapacity(interpolationCount)
        }

        /// Appends literal SQL text as written.
        public mutating func appendLiteral(_ literal: StaticString) {
            parts.append(.literal(literal.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }))
        }

        /// Appends a parameter and binds `value` to it.
        public mutating func appendInterpolation(_ value: some PostgresBindable) {
            parts.append(.parameter)
            bindings.append(value.postgresValue)
        }

        /// Appends a parameter bound to `value`, or to `NULL` when it is `nil`.
        public mutating func appendInterpolation(_ value: (some PostgresBindable)?) {
            parts.append(.parameter)
            bindings.append(value?.postgresValue ?? .null)
        }

        /// Embeds another fragment: its text as written and its bindings.
        public mutating func appendInterpolation(_ fragment: PostgresSQL) {
            parts += fragment.parts
            bindings += fragment.bindings
        }

        /// Appends one parameter bound to a `text[]` holding `values` (cast it: `\(textArray: ids)::text[]`).
        public mutating func appendInterpolation<S: Sequence>(textArray values: S) where S.Element == String {
            parts.append(.parameter)
            bindings.append(.text(PostgresSQL.arrayLiteral(values.lazy.map { Optional($0) })))
        }

        /// Appends one parameter bound to a `text[]` whose elements may be `NULL`.
        public mutating func appendInterpolation(optionalTextArray values: [String?]) {
            parts.append(.parameter)
            bindings.append(.text(PostgresSQL.arrayLiteral(values)))
        }
    }

    /// The text form of a one-dimensional array: every element double-quoted, `"` and `\`
    /// backslash-escaped, `NULL` unquoted.
    /// Takes any sequence, so text elements go in through a lazy map, not a copied array.
    static func arrayLiteral<S: Sequence>(_ values: S) -> String where S.Element == String? {
        // Built as UTF-8 bytes: `"` and `\` are ASCII, so escaping byte by byte keeps every other
        // scalar's bytes whole.
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(2 + values.underestimatedCount * 24)
        for (i, v) in values.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard let v else {
                out += "NULL".utf8
                continue
            }
            out.append(UInt8(ascii: "\""))
            for byte in v.utf8 {
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                out.append(byte)
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

extension Sequence where Element == PostgresSQL {
    /// The fragments one after another with `separator` between them, bindings in order.
    public func joined(separator: PostgresSQL) -> PostgresSQL {
        var out = PostgresSQL()
        var first = true
        for fragment in self {
            if !first { out.append(separator) }
            first = false
            out.append(fragment)
        }
        return out
    }
}
