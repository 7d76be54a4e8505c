import HeraldSQL

/// One result row of SQLite: HeraldSQL's shared row over ``SQLiteValue``.
public typealias SQLiteRow = SQLRow<SQLiteValue>

extension SQLiteValue: SQLColumnValue {
    /// The text of ``text(_:)``.
    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The integer of ``integer(_:)``.
    public var integerValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The double of ``real(_:)``, or the integer of ``integer(_:)`` converted.
    public var realValue: Double? {
        switch self {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The bytes of ``blob(_:)``.
    public var bytesValue: [UInt8]? {
        if case .blob(let value) = self { return value }
        return nil
    }

    /// An ``integer(_:)`` as SQLite stores booleans: `true` unless it is 0.
    public var boolValue: Bool? { integerValue.map { $0 != 0 } }
}
