/// One result row: column names in result order and their values.
public struct PostgresRow: Sendable {
    /// The column names, in result order.
    public let columns: [String]
    /// The column values, in result order.
    public let values: [PostgresValue]
    private let indexByName: [String: Int]

    /// Creates a row. `columns` and `values` are paired by position; when a name repeats, lookups
    /// by name find the first column with that name.
    public init(columns: [String], values: [PostgresValue]) {
        var index: [String: Int] = [:]
        for (position, name) in columns.enumerated() where index[name] == nil { index[name] = position }
        self.init(columns: columns, values: values, indexByName: index)
    }

    init(columns: [String], values: [PostgresValue], indexByName: [String: Int]) {
        self.columns = columns
        self.values = values
        self.indexByName = indexByName
    }

    /// The value of the named column, or ``PostgresValue/null`` when there is no such column.
    public subscript(_ column: String) -> PostgresValue {
        guard let position = indexByName[column] else { return .null }
        return self[position]
    }

    /// The value at a zero-based column position, or ``PostgresValue/null`` when out of range.
    public subscript(_ index: Int) -> PostgresValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The named column as text; `nil` unless it holds ``PostgresValue/text(_:)``.
    public func string(_ column: String) -> String? {
        if case .text(let value) = self[column] { return value }
        return nil
    }

    /// The named column as an integer; `nil` unless it holds ``PostgresValue/integer(_:)``.
    public func int(_ column: String) -> Int64? {
        if case .integer(let value) = self[column] { return value }
        return nil
    }

    /// The named column as a boolean; `nil` unless it holds ``PostgresValue/bool(_:)``.
    public func bool(_ column: String) -> Bool? {
        if case .bool(let value) = self[column] { return value }
        return nil
    }

    /// The named column as bytes; `nil` unless it holds ``PostgresValue/bytes(_:)``.
    public func bytes(_ column: String) -> [UInt8]? {
        if case .bytes(let value) = self[column] { return value }
        return nil
    }
}
