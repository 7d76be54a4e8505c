import HeraldSQL

/// One result row of SQLite: HeraldSQL's shared row.
public typealias SQLiteRow = SQLRow
