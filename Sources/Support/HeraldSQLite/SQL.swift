import HeraldSQL

/// One SQLite statement (or a fragment of one) with the values bound to its `?` placeholders:
/// HeraldSQL's ``SQLStatement`` in ``SQLiteDialect``.
///
/// ```swift
/// try connection.run("UPDATE deliveries SET state = \(state), updated_at = \(now) WHERE id = \(id)")
/// ```
///
/// Text without interpolation is taken as written: a `?` typed into it is a placeholder with no
/// value and fails with `SQLITE_RANGE` when run. The text with its placeholders (UTF-8 bytes) is the
/// key of the connection's prepared-statement cache, so a statement that differs only in its values
/// is prepared once. SQLite takes `IN ()` (`\(list:)` of no values) as the empty set.
public typealias SQL = SQLStatement<SQLiteDialect>

/// SQLite's way of writing parameters (`?`) and binding values (booleans as `1` and `0`).
public enum SQLiteDialect: SQLDialect {
    /// `?` (inlinable: every bound value of the store's hot paths writes one).
    @inlinable public static var placeholder: UInt8 { UInt8(ascii: "?") }
    /// ``SQLiteValue/text(_:)``.
    @inlinable public static func bind(_ value: String) -> SQLiteValue { .text(value) }
    /// ``SQLiteValue/integer(_:)``.
    @inlinable public static func bind(_ value: Int64) -> SQLiteValue { .integer(value) }
    /// ``SQLiteValue/real(_:)``.
    @inlinable public static func bind(_ value: Double) -> SQLiteValue { .real(value) }
    /// `1` or `0`, as SQLite stores booleans.
    @inlinable public static func bind(_ value: Bool) -> SQLiteValue { .integer(value ? 1 : 0) }
    /// ``SQLValue/bytes(_:)`` (an empty array binds a zero-length blob, not `NULL`).
    @inlinable public static func bind(_ value: [UInt8]) -> SQLiteValue { .bytes(value) }
}
