/// A single SQLite value, used both for statement bindings and for result columns.
public enum SQLiteValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer (`INTEGER` storage class).
    case integer(Int64)
    /// An IEEE 754 double (`REAL` storage class).
    case real(Double)
    /// UTF-8 text (`TEXT` storage class).
    case text(String)
    /// Raw bytes (`BLOB` storage class). An empty array binds a zero-length blob, not `NULL`.
    case blob([UInt8])
}

extension SQLiteValue {
    /// `true` when the value is ``SQLiteValue/null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }
}
