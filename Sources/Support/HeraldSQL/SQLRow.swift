/// One result row: column names in result order and their values, read by name or position.
///
/// The one row type of both database wrappers (`SQLiteRow` and `PostgresRow` are this type), so a
/// record is decoded by one function whichever database it came from (GRDB's `Row` is the model).
public struct SQLRow: Sendable {
    /// The column names, in result order.
    public let columns: [String]
    /// The column values, in result order.
    public let values: [SQLValue]
    private let indexByName: [String: Int]

    /// Creates a row. `columns` and `values` are paired by position; extra values are ignored.
    /// When a name repeats, lookups by name find the first column with that name.
    public init(columns: [String], values: [SQLValue]) {
        self.init(columns: columns, values: values, indexByName: SQLRow.index(of: columns))
    }

    /// Creates a row sharing the name index of its result's other rows (see ``index(of:)``).
    package init(columns: [String], values: [SQLValue], indexByName: [String: Int]) {
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

    /// The value of the named column, or ``SQLValue/null`` when there is no such column.
    public subscript(_ column: String) -> SQLValue {
        guard let position = indexByName[column] else { return .null }
        return self[position]
    }

    /// The value at a zero-based column position, or ``SQLValue/null`` when out of range.
    public subscript(_ index: Int) -> SQLValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The named column as text; `nil` unless it holds ``SQLValue/text(_:)``.
    public func string(_ column: String) -> String? {
        if case .text(let value) = self[column] { return value }
        return nil
    }

    /// The named column as an integer; `nil` unless it holds ``SQLValue/integer(_:)``.
    public func int(_ column: String) -> Int64? {
        if case .integer(let value) = self[column] { return value }
        return nil
    }

    /// The named column as a double; converts ``SQLValue/integer(_:)``, `nil` for other values.
    public func double(_ column: String) -> Double? {
        switch self[column] {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: return nil
        }
    }

    /// The named column as bytes; `nil` unless it holds ``SQLValue/bytes(_:)``.
    public func bytes(_ column: String) -> [UInt8]? {
        if case .bytes(let value) = self[column] { return value }
        return nil
    }

    /// The named column as a boolean: ``SQLValue/bool(_:)``, or an ``SQLValue/integer(_:)`` as SQLite
    /// stores booleans (`true` unless 0); `nil` for other values.
    public func bool(_ column: String) -> Bool? {
        switch self[column] {
        case .bool(let value): return value
        case .integer(let value): return value != 0
        default: return nil
        }
    }
}
