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
/// The text (with its placeholders) is the key of the connection's prepared-statement cache, so a
/// statement that differs only in its values is prepared once.
public struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text, with one `?` per bound value.
    public private(set) var text: String
    /// The values bound to the placeholders of ``text``, in order.
    public private(set) var bindings: [SQLiteValue]

    /// SQL text without bound values, taken as written.
    public init(stringLiteral value: String) {
        text = value
        bindings = []
    }

    /// SQL built by interpolation: literal parts are text, interpolated values are bound.
    public init(stringInterpolation: Interpolation) {
        text = stringInterpolation.text
        bindings = stringInterpolation.bindings
    }

    /// An empty fragment, to append to.
    public init() {
        text = ""
        bindings = []
    }

    /// Appends `other`'s text and bindings (for statements built in a loop).
    public mutating func append(_ other: SQL) {
        text += other.text
        bindings += other.bindings
    }

    /// Reserves room for `bindings` more bound values (a large multi-row `INSERT`).
    public mutating func reserveBindings(_ count: Int) {
        bindings.reserveCapacity(bindings.count + max(0, count))
    }

    /// `true` when there is no text.
    public var isEmpty: Bool { text.isEmpty }

    /// The text and the number of bound values; never the values, which may be secret.
    public var description: String { "\(text) [\(bindings.count) bound]" }

    /// Builds ``SQL`` from string interpolation; see ``SQL``.
    public struct Interpolation: StringInterpolationProtocol {
        var text: String
        var bindings: [SQLiteValue]

        /// Creates an empty interpolation (called by the compiler).
        public init(literalCapacity: Int, interpolationCount: Int) {
            text = ""
            text.reserveCapacity(literalCapacity + interpolationCount)
            bindings = []
            bindings.reserveCapacity(interpolationCount)
        }

        /// Appends literal SQL text as written.
        public mutating func appendLiteral(_ literal: String) {
            text += literal
        }

        /// Appends a `?` placeholder and binds `value` to it.
        public mutating func appendInterpolation(_ value: some SQLiteBindable) {
            text += "?"
            bindings.append(value.sqliteValue)
        }

        /// Appends a `?` placeholder bound to `value`, or to `NULL` when it is `nil`.
        public mutating func appendInterpolation(_ value: (some SQLiteBindable)?) {
            text += "?"
            bindings.append(value?.sqliteValue ?? .null)
        }

        /// Embeds another fragment: its text as written and its bindings.
        public mutating func appendInterpolation(_ fragment: SQL) {
            text += fragment.text
            bindings += fragment.bindings
        }

        /// Appends `?, ?, …` with one placeholder per value (nothing for no values; SQLite takes
        /// `IN ()` as the empty set).
        public mutating func appendInterpolation<S: Sequence>(list values: S) where S.Element: SQLiteBindable {
            var first = true
            for value in values {
                text += first ? "?" : ", ?"
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
    public var sqliteValue: SQLiteValue { self }
}

extension String: SQLiteBindable {
    /// ``SQLiteValue/text(_:)``.
    public var sqliteValue: SQLiteValue { .text(self) }
}

extension Substring: SQLiteBindable {
    /// ``SQLiteValue/text(_:)``.
    public var sqliteValue: SQLiteValue { .text(String(self)) }
}

extension Int64: SQLiteBindable {
    /// ``SQLiteValue/integer(_:)``.
    public var sqliteValue: SQLiteValue { .integer(self) }
}

extension Int: SQLiteBindable {
    /// ``SQLiteValue/integer(_:)`` (clamped to `Int64` where `Int` is wider).
    public var sqliteValue: SQLiteValue { .integer(Int64(clamping: self)) }
}

extension Int32: SQLiteBindable {
    /// ``SQLiteValue/integer(_:)``.
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Bool: SQLiteBindable {
    /// `1` or `0`, as SQLite stores booleans.
    public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension Double: SQLiteBindable {
    /// ``SQLiteValue/real(_:)``.
    public var sqliteValue: SQLiteValue { .real(self) }
}

extension Array: SQLiteBindable where Element == UInt8 {
    /// ``SQLiteValue/blob(_:)`` (an empty array binds a zero-length blob, not `NULL`).
    public var sqliteValue: SQLiteValue { .blob(self) }
}
