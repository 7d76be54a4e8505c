/// One result row: column names in result order and their values.
public struct SQLiteRow: Sendable {
    /// The column names, in result order.
    public let columns: [String]
    /// The column values, in result order.
    public let values: [SQLiteValue]
    private let indexByName: [String: Int]

    /// Creates a row. `columns` and `values` are paired by position; extra values are ignored.
    /// When a name repeats, lookups by name find the first column with that name.
    public init(columns: [String], values: [SQLiteValue]) {
        var index: [String: Int] = [:]
        for (position, name) in columns.enumerated() where index[name] == nil {
            index[name] = position
        }
        self.init(columns: columns, values: values, indexByName: index)
    }

    init(columns: [String], values: [SQLiteValue], indexByName: [String: Int]) {
        self.columns = columns
        self.values = values
        self.indexByName = indexByName
    }

    /// The value of the named column, or ``SQLiteValue/null`` when there is no such column.
    public subscript(_ column: String) -> SQLiteValue {
        guard let position = indexByName[column] else { return .null }
        return self[position]
    }

    /// The value at a zero-based column position, or ``SQLiteValue/null`` when out of range.
    public subscript(_ index: Int) -> SQLiteValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The named column as text; `nil` unless it holds ``SQLiteValue/text(_:)``.
    public func string(_ column: String) -> String? {
        if case .text(let value) = self[column] { return value }
        return nil
    }

    /// The named column as an integer; `nil` unless it holds ``SQLiteValue/integer(_:)``.
    public func int(_ column: String) -> Int64? {
        if case .integer(let value) = self[column] { return value }
        return nil
    }

    /// The named column as a double; converts ``SQLiteValue/integer(_:)``, `nil` for other types.
    public func double(_ column: String) -> Double? {
        switch self[column] {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The named column as bytes; `nil` unless it holds ``SQLiteValue/blob(_:)``.
    public func blob(_ column: String) -> [UInt8]? {
        if case .blob(let value) = self[column] { return value }
        return nil
    }
}
