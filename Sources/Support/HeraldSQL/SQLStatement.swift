/// How one database writes a statement's parameters and binds Swift values to them.
///
/// HeraldSQLite's `SQLiteDialect` writes `?` and binds booleans as integers; HeraldPostgres's
/// `PostgresDialect` numbers its parameters `$1`, `$2`, … and has booleans of its own.
public protocol SQLDialect: Sendable {
    /// The byte written into the statement's UTF-8 text for each parameter: the placeholder
    /// itself, or a byte that never occurs in UTF-8 (0xFF) that ``text(of:)`` replaces.
    static var placeholder: UInt8 { get }
    /// The statement text from its UTF-8 bytes (with one ``placeholder`` per parameter).
    static func text(of utf8: [UInt8]) -> String
    /// Binds text.
    static func bind(_ value: String) -> SQLValue
    /// Binds an integer.
    static func bind(_ value: Int64) -> SQLValue
    /// Binds a double.
    static func bind(_ value: Double) -> SQLValue
    /// Binds a boolean.
    static func bind(_ value: Bool) -> SQLValue
    /// Binds bytes (an empty array binds empty bytes, not `NULL`).
    static func bind(_ value: [UInt8]) -> SQLValue
}

extension SQLDialect {
    /// The bytes as UTF-8 text: for a dialect whose placeholder is written as is.
    @inlinable public static func text(of utf8: [UInt8]) -> String { String(decoding: utf8, as: UTF8.self) }
}

/// A Swift value that binds to one parameter of an ``SQLStatement`` of any dialect.
public protocol SQLBindable {
    /// The value bound for this Swift value in `dialect`.
    func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue
}

/// One SQL statement (or a fragment of one) with the values bound to its parameters, in the
/// dialect `Dialect` (HeraldSQLite's `SQL`, HeraldPostgres's `PostgresSQL`).
///
/// Write SQL as a string literal and interpolate values: each `\(value)` becomes a parameter and
/// its value is bound, never spliced into the text, so a value holding quotes or SQL cannot change
/// the statement (GRDB's `SQLInterpolation` is the model):
///
/// ```swift
/// try connection.run("UPDATE deliveries SET state = \(state), updated_at = \(now) WHERE id = \(id)")
/// ```
///
/// Values are anything ``SQLBindable`` (`String`, `Int`, `Int64`, `Double`, `Bool`, `[UInt8]`, and
/// optionals of them: `nil` binds `NULL`) or an ``SQLValue``. Interpolating another
/// statement embeds its text and its bindings (for conditions and rows built in a loop);
/// `\(list: values)` writes one parameter per value, comma-separated, for an `IN (…)` list. Only
/// literals are SQL text (the literal type is `StaticString`): text made at run time cannot become a
/// statement, so it cannot be spliced by mistake. A statement that does not interpolate anything
/// dialect-specific can be written once, generic over the dialect, and run on either database.
///
/// The text is kept as UTF-8 bytes: building a statement per delivery costs a few byte copies, not
/// `String` appends, and a connection's prepared-statement cache can be keyed by them.
public struct SQLStatement<Dialect: SQLDialect>: Sendable, Hashable, ExpressibleByStringInterpolation,
    CustomStringConvertible
{
    /// The UTF-8 bytes of the text, with ``SQLDialect/placeholder`` for each parameter.
    public private(set) var utf8: [UInt8]
    /// The values bound to the parameters, in order.
    public private(set) var bindings: [SQLValue]

    /// The SQL text, with the dialect's placeholders.
    public var text: String { Dialect.text(of: utf8) }

    /// SQL text without bound values, taken as written.
    public init(stringLiteral value: StaticString) {
        utf8 = value.withUTF8Buffer { Array($0) }
        bindings = []
    }

    /// SQL built by interpolation: literal parts are text, interpolated values are bound.
    public init(stringInterpolation: Interpolation) {
        utf8 = stringInterpolation.utf8
        bindings = stringInterpolation.bindings
    }

    /// An empty fragment, to append to.
    public init() {
        utf8 = []
        bindings = []
    }

    /// Appends `other`'s text and bindings (for statements built in a loop).
    public mutating func append(_ other: SQLStatement) {
        utf8 += other.utf8
        bindings += other.bindings
    }

    /// Appends literal text (a separator between fragments built in a loop) without building a
    /// statement for it.
    public mutating func appendLiteral(_ literal: StaticString) {
        literal.withUTF8Buffer { utf8.append(contentsOf: $0) }
    }

    /// Reserves room for `bindings` more bound values (a large multi-row `INSERT`).
    public mutating func reserveBindings(_ count: Int) {
        bindings.reserveCapacity(bindings.count + max(0, count))
    }

    /// `true` when there is no text.
    public var isEmpty: Bool { utf8.isEmpty }

    /// The text and the number of bound values; never the values, which may be secret.
    public var description: String { "\(text) [\(bindings.count) bound]" }

    /// Builds an ``SQLStatement`` from string interpolation; see ``SQLStatement``.
    ///
    /// Its methods are `@inlinable` so that each call site is specialised for its value types (the
    /// stores' hot paths build a statement per delivery).
    public struct Interpolation: StringInterpolationProtocol {
        @usableFromInline var utf8: [UInt8]
        @usableFromInline var bindings: [SQLValue]

        /// Creates an empty interpolation (called by the compiler).
        @inlinable public init(literalCapacity: Int, interpolationCount: Int) {
            utf8 = []
            utf8.reserveCapacity(literalCapacity + interpolationCount)
            bindings = []
            bindings.reserveCapacity(interpolationCount)
        }

        /// Appends literal SQL text as written.
        @inlinable public mutating func appendLiteral(_ literal: StaticString) {
            literal.withUTF8Buffer { utf8.append(contentsOf: $0) }
        }

        /// Appends one parameter bound to `value` (for a dialect's own kinds of parameter, such as
        /// PostgreSQL's arrays).
        @inlinable public mutating func appendParameter(_ value: SQLValue) {
            utf8.append(Dialect.placeholder)
            bindings.append(value)
        }

        /// Appends a parameter and binds `value` to it.
        @inlinable public mutating func appendInterpolation(_ value: some SQLBindable) {
            appendParameter(value.sqlValue(in: Dialect.self))
        }

        /// Appends a parameter bound to `value`, or to `NULL` when it is `nil`.
        @inlinable public mutating func appendInterpolation(_ value: (some SQLBindable)?) {
            appendParameter(value?.sqlValue(in: Dialect.self) ?? .null)
        }

        /// Appends a parameter bound to a value as it is.
        @inlinable public mutating func appendInterpolation(_ value: SQLValue) {
            appendParameter(value)
        }

        /// Embeds another fragment: its text as written and its bindings.
        @inlinable public mutating func appendInterpolation(_ fragment: SQLStatement) {
            utf8 += fragment.utf8
            bindings += fragment.bindings
        }

        /// Appends one parameter per value, comma-separated (nothing for no values).
        @inlinable public mutating func appendInterpolation<S: Sequence>(list values: S)
        where S.Element: SQLBindable {
            var first = true
            for value in values {
                if !first {
                    utf8.append(UInt8(ascii: ","))
                    utf8.append(UInt8(ascii: " "))
                }
                first = false
                appendParameter(value.sqlValue(in: Dialect.self))
            }
        }
    }
}

extension Sequence {
    /// The fragments one after another with `separator` between them, bindings in order.
    public func joined<D: SQLDialect>(separator: SQLStatement<D>) -> SQLStatement<D>
    where Element == SQLStatement<D> {
        var out = SQLStatement<D>()
        var first = true
        for fragment in self {
            if !first { out.append(separator) }
            first = false
            out.append(fragment)
        }
        return out
    }
}

extension String: SQLBindable {
    /// Text.
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(self) }
}

extension Substring: SQLBindable {
    /// Text.
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(String(self)) }
}

extension Int64: SQLBindable {
    /// An integer.
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(self) }
}

extension Int: SQLBindable {
    /// An integer (clamped to `Int64` where `Int` is wider).
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(Int64(clamping: self)) }
}

extension Int32: SQLBindable {
    /// An integer.
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(Int64(self)) }
}

extension Bool: SQLBindable {
    /// A boolean, as the dialect stores it.
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(self) }
}

extension Double: SQLBindable {
    /// A double.
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(self) }
}

extension Array: SQLBindable where Element == UInt8 {
    /// Bytes (an empty array binds empty bytes, not `NULL`).
    @inlinable public func sqlValue<D: SQLDialect>(in dialect: D.Type) -> SQLValue { D.bind(self) }
}
