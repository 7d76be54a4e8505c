/// One database value: bound to a statement's parameter or read from a result column, by both
/// database wrappers (HeraldSQLite's `SQLiteValue` and HeraldPostgres's `PostgresValue` are this type).
///
/// SQLite has no booleans: it binds ``bool(_:)`` as `1` or `0` and never reads one (``SQLRow/bool(_:)``
/// reads an integer as a boolean). PostgreSQL reads `int2`/`int4`/`int8` as ``integer(_:)``,
/// `float4`/`float8`/`numeric` as ``real(_:)``, `bool` as ``bool(_:)``, `bytea` as ``bytes(_:)`` and
/// everything else as ``text(_:)``.
public enum SQLValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// An IEEE 754 double.
    case real(Double)
    /// A boolean.
    case bool(Bool)
    /// UTF-8 text.
    case text(String)
    /// Raw bytes (SQLite's blob, PostgreSQL's `bytea`). An empty array binds empty bytes, not `NULL`.
    case bytes([UInt8])

    /// `true` when the value is ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
