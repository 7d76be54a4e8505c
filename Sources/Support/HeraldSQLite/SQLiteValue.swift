import HeraldSQL

/// A single SQLite value, for statement bindings and result columns: HeraldSQL's shared value.
/// SQLite binds ``SQLValue/bool(_:)`` as `1` or `0` and reads its storage classes as
/// ``SQLValue/integer(_:)``, ``SQLValue/real(_:)``, ``SQLValue/text(_:)`` and ``SQLValue/bytes(_:)``
/// (an empty blob reads as empty bytes).
public typealias SQLiteValue = SQLValue
