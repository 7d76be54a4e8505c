/// One SQL statement (or a fragment of one) with the values bound to its `?` placeholders.
///
/// Write SQL as a string literal and interpolate values: each `\(value)` becomes a `?` placeholder
/// and its value is bound, never spliced into the text, so a value holding quotes or SQL cannot
/// change the statement (GRDB's `SQLInterpolation` is the model):
///
/// ```swift
/// try connection.run("UPDATE deliveries SET state = \(state), updated_at = \(now) WHERE id = \(id)")
/// ```
///
/// Values are anything ``SQLiteBindable``: `String`, `Int`, `Int64`, `Double`, `Bool`, `[UInt8]`,
/// ``SQLiteValue``, and optionals of them (`nil` binds `NULL`). Interpolating another `SQL` embeds its
/// text and its bindings (for conditions and rows built in a loop); `\(list: values)` writes
/// `?, ?, ?` for an `IN (…)` list. Text without interpolation is taken as written: a `?` typed into
/// it is a placeholder with no value and fails with `SQLITE_RANGE` when run.
///
/// Only literals are SQL text (the literal type is `StaticString`): text made at run time cannot
/// become an `SQL` value, so it cannot be spliced by mistake.
///
/// The text (with its placeholders) is the key of the connection's prepared-statement cache, so a
/// statement that differs only in its values is prepared once. It is kept as UTF-8 bytes and the
/// cache is looked up by those bytes: building a statement per delivery costs a few byte copies,
/// not `String` appends.
public struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The UTF-8 bytes of ``text``.
    public private(set) var utf8: [UInt8]
    /// The values bound to the placeholders of ``text``, in order.
    public private(set) var bindings: [SQLiteValue]

    /// The SQL text, with one `?` per bound value.
    public var text: String { String(decoding: utf8, as: UTF8.self) }

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
    public mutating func append(_ other: SQL) {
        utf8 += other.utf8
        bindings += other.bindings
    }

    /// Appends literal text (a separator between fragments built in a loop) without building an
    /// `SQL` value for it.
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

    /// Builds ``SQL`` from string interpolation; see ``SQL``.
    ///
    /// Its methods are `@inlinable` so that each call site is specialised for its value types (the
    /// store's hot paths build a statement per delivery).
    public struct Interpolation: StringInterpolationProtocol {
        @usableFromInline var utf8: [UInt8]
        @usableFromInline var bindings: [SQLiteValue]

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

        /// Appends a `?` placeholder and binds `value` to it.
        @inlinable public mutating func appendInterpolation(_ value: some SQLiteBindable) {
            utf8.append(UInt8(ascii: "?"))
            bindings.append(value.sqliteValue)
        }

        /// Appends a `?` placeholder bound to `value`, or to `NULL` when it is `nil`.
        @inlinable public mutating func appendInterpolation(_ value: (some SQLiteBindable)?) {
            utf8.append(UInt8(ascii: "?"))
            bindings.append(value?.sqliteValue ?? .null)
        }

        /// Embeds another fragment: its text as written and its bindings.
        @inlinable public mutating func appendInterpolation(_ fragment: SQL) {
            utf8 += fragment.utf8
            bindings += fragment.bindings
        }

        /// Appends `?, ?, …` with one placeholder per value (nothing for no values; SQLite takes
        /// `IN ()` as the empty set).
        @inlinable public mutating func appendInterpolation<S: Sequence>(list values: S)
        where S.Element: SQLiteBindable {
            var first = true
            for value in values {
                if !first {
                    utf8.append(UInt8(ascii: ","))
                    utf8.append(UInt8(ascii: " "))
                }
                utf8.append(UInt8(ascii: "?"))
                first = false
                bindings.append(value.sqliteValue)
            }
        }
    }
}

extension Sequence where Element == SQL {
    /// The fragments one after another with `separator` between them, bindings in order.
    public func joined(separator: SQL) -> SQL {
        var out = SQL()
        var first = true
        for fragment in self {
            if !first { out.append(separator) }
            first = false
            out.append(fragment)
        }
        return out
    }
}

/// A Swift value that binds to one SQLite value in ``SQL`` interpolation.
public protocol SQLiteBindable {
    /// The value bound for this Swift value.
    var sqliteValue: SQLiteValue { get }
}

extension SQLiteValue: SQLiteBindable {
    /// The value itself.
    @inlinable public var sqliteValue: SQLiteValue { self }
}

extension String: SQLiteBindable {
    /// ``SQLiteValue/text(_:)``.
    @inlinable public var sqliteValue: SQLiteValue { .text(self) }
}

extension Substring: SQLiteBindable {
    /// ``SQLiteValue/text(_:)``.
    @inlinable public var sqliteValue: SQLiteValue { .text(String(self)) }
}

extension Int64: SQLiteBindable {
    /// ``SQLiteValue/integer(_:)``.
    @inlinable public var sqliteValue: SQLiteValue { .integer(self) }
}

extension Int: SQLiteBindable {
    /// ``SQLiteValue/integer(_:)`` (clamped to `Int64` where `Int` is wider).
    @inlinable public var sqliteValue: SQLiteValue { .integer(Int64(clamping: self)) }
}

extension Int32: SQLiteBindable {
    /// ``SQLiteValue/integer(_:)``.
    @inlinable public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Bool: SQLiteBindable {
    /// `1` or `0`, as SQLite stores booleans.
    @inlinable public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension Double: SQLiteBindable {
    /// ``SQLiteValue/real(_:)``.
    @inlinable public var sqliteValue: SQLiteValue { .real(self) }
}

extension Array: SQLiteBindable where Element == UInt8 {
    /// ``SQLiteValue/blob(_:)`` (an empty array binds a zero-length blob, not `NULL`).
    @inlinable public var sqliteValue: SQLiteValue { .blob(self) }
}
