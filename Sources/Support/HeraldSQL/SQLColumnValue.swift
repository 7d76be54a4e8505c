/// A value of one database library (a bound parameter or a result column), as the shared row
/// layer reads it: ``SQLRow`` asks it for each Swift type and gets `nil` when it holds another.
///
/// HeraldSQLite's `SQLiteValue` and HeraldPostgres's `PostgresValue` conform; each keeps its own
/// cases (SQLite stores booleans as integers, PostgreSQL has `bool`).
public protocol SQLColumnValue: Sendable, Hashable {
    /// SQL `NULL`.
    static var null: Self { get }
    /// The text, or `nil` unless the value is text.
    var textValue: String? { get }
    /// The integer, or `nil` unless the value is an integer.
    var integerValue: Int64? { get }
    /// The double; an integer converts, `nil` for other values.
    var realValue: Double? { get }
    /// The bytes, or `nil` unless the value is a blob (`bytea`).
    var bytesValue: [UInt8]? { get }
    /// The boolean, or `nil` unless the value is one (as the library stores booleans).
    var boolValue: Bool? { get }
}
