/// One result row: column names in result order and their values, read by name or position.
///
/// The one row type of both database wrappers (`SQLiteRow` and `PostgresRow` are this type over
/// their own values), so a record is decoded by one function whichever database it came from
/// (GRDB's `Row` is the model).
public struct SQLRow<Value: SQLColumnValue>: Sendable {
    /// The column names, in result order.
    public let columns: [String]
    /// The column values, in result order.
    public let values: [Value]
    private let indexByName: [String: Int]

    /// Creates a row. `columns` and `values` are paired by position; extra values are ignored.
    /// When a name repeats, lookups by name find the first column with that name.
    public init(columns: [String], values: [Value]) {
        self.init(columns: columns, values: values, indexByName: SQLRow.index(of: columns))
    }

    /// Creates a row sharing the name index of its result's other rows (see ``index(of:)``).
    package init(columns: [String], values: [Value], indexByName: [String: Int]) {
        self.columns = columns
        self.values = values
        self.indexByName = indexByName
    }

    /// The position of each column name (the first, when a name repeats).
    package static func index(of columns: [String]) -> [String: Int] {
        var index: [String: Int] = [:]
        for (position, name) in columns.enumerated() where index[name] == nil { index[name] = position }
        return index
    }

    /// The value of the named column, or `NULL` when there is no such column.
    public subscript(_ column: String) -> Value {
        guard let position = indexByName[column] else { return .null }
        return self[position]
    }

    /// The value at a zero-based column position, or `NULL` when out of range.
    public subscript(_ index: Int) -> Value {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The named column as text; `nil` unless it holds text.
    public func string(_ column: String) -> String? { self[column].textValue }

    /// The named column as an integer; `nil` unless it holds an integer.
    public func int(_ column: String) -> Int64? { self[column].integerValue }

    /// The named column as a double; an integer converts, `nil` for other values.
    public func double(_ column: String) -> Double? { self[column].realValue }

    /// The named column as bytes; `nil` unless it holds a blob (`bytea`).
    public func bytes(_ column: String) -> [UInt8]? { self[column].bytesValue }

    /// The named column as a boolean; `nil` unless it holds one.
    public func bool(_ column: String) -> Bool? { self[column].boolValue }
}
