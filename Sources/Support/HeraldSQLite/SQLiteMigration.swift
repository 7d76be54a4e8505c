/// One schema step for ``SQLiteDatabase/migrate(_:)``, identified by the `PRAGMA user_version` it produces.
public struct SQLiteMigration: Sendable {
    /// The `user_version` the database has after this migration; must be positive and unique.
    public let version: Int
    /// One or more SQL statements, run with `sqlite3_exec` inside the migration's transaction.
    public let sql: String

    /// Creates a migration.
    public init(version: Int, sql: String) {
        self.version = version
        self.sql = sql
    }
}
