import HeraldSQL

/// One result row of PostgreSQL: HeraldSQL's shared row over ``PostgresValue``.
public typealias PostgresRow = SQLRow<PostgresValue>

extension PostgresValue: SQLColumnValue {
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

    /// The bytes of ``bytes(_:)``.
    public var bytesValue: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    /// The boolean of ``bool(_:)``.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}
