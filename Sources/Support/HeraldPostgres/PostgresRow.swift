import HeraldSQL

/// One result row of PostgreSQL: HeraldSQL's shared row.
public typealias PostgresRow = SQLRow
