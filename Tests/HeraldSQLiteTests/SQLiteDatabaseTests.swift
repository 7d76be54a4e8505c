import Foundation
import HeraldSQLite
import Testing

/// A fresh directory under the temp dir; the nested `sub/dir` checks parent-directory creation.
private func temporaryDatabasePath(_ name: String = "test.db") -> String {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sqlite-\(UUID().uuidString)")
    return base.appendingPathComponent("sub/dir/\(name)").path
}

private func removeDatabase(at path: String) {
    let directory = URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    try? FileManager.default.removeItem(at: directory)
}

private struct Boom: Error {}

@Suite struct SQLiteDatabaseTests {
    @Test func fileDatabaseUsesWALAndCreatesParentDirectory() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(at: path) }
        let db = try SQLiteDatabase(path: path)
        #expect(try db.journalMode == "wal")
        #expect(FileManager.default.fileExists(atPath: path))
        let foreignKeys = try db.query("PRAGMA foreign_keys").first?[0]
        #expect(foreignKeys == .integer(1))
        let synchronous = try db.query("PRAGMA synchronous").first?[0]
        #expect(synchronous == .integer(1))  // NORMAL
    }

    @Test func memoryDatabaseOpens() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        #expect(try db.journalMode == "memory")
        #expect(try db.userVersion == 0)
    }

    @Test func crudWithEveryValueType() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
        let text = "héllo 🌍 with\u{0}nul"
        let bytes: [UInt8] = [0, 1, 2, 255]
        let id = try db.withConnection { connection in
            try connection.run(
                "INSERT INTO t (i, r, s, b, n) VALUES (\(Int64.max), \(3.25), \(text), \(bytes), \(SQLiteValue.null))")
            #expect(connection.changes == 1)
            return connection.lastInsertRowID
        }
        #expect(id == 1)

        let row = try #require(try db.query("SELECT * FROM t WHERE id = \(id)").first)
        #expect(row.columns == ["id", "i", "r", "s", "b", "n"])
        #expect(row.int("i") == Int64.max)
        #expect(row.double("r") == 3.25)
        #expect(row.string("s") == text)
        #expect(row.bytes("b") == bytes)
        #expect(row["n"] == .null)
        #expect(row["missing"] == .null)
        #expect(row[1] == .integer(Int64.max))
        #expect(row[99] == .null)
        #expect(row.string("i") == nil)

        // Empty text and empty blob stay non-NULL.
        try db.run("UPDATE t SET s = \(""), b = \([UInt8]()) WHERE id = \(id)")
        let updated = try #require(try db.query("SELECT s, b, typeof(b) AS kind FROM t").first)
        #expect(updated["s"] == .text(""))
        #expect(updated["b"] == .bytes([]))
        #expect(updated.string("kind") == "blob")

        try db.withConnection { connection in
            try connection.run("DELETE FROM t WHERE id = \(id)")
            #expect(connection.changes == 1)
            #expect(try connection.queryOne("SELECT * FROM t") == nil)
        }
    }

    @Test func preparedStatementIsReused() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v INTEGER)")
        try db.withConnection { connection in
            let before = connection.cachedStatementCount
            try connection.run("INSERT INTO t (v) VALUES (\(1))")
            try connection.run("INSERT INTO t (v) VALUES (\(2))")
            #expect(connection.cachedStatementCount == before + 1)
            let rows = try connection.query("SELECT v FROM t ORDER BY v")
            let again = try connection.query("SELECT v FROM t ORDER BY v")
            #expect(rows.map { $0.int("v") } == [1, 2])
            #expect(again.map { $0.int("v") } == [1, 2])
            #expect(connection.cachedStatementCount == before + 2)
        }
    }

    @Test func bindingCountMismatchAndMultipleStatementsAreRefused() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v INTEGER)")
        let mismatch = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (?)") }
        #expect(mismatch?.call == "sqlite3_bind")
        let multiple = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)")
        }
        #expect(multiple?.call == "sqlite3_prepare_v2")
        try db.run("INSERT INTO t VALUES (1); -- trailing comment")
        #expect(try db.query("SELECT count(*) AS n FROM t").first?.int("n") == 1)
        #expect(try db.query("  -- nothing  ").isEmpty)
    }

    @Test func transactionCommitsAndRollsBack() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v INTEGER)")
        let value = try db.transaction { connection in
            try connection.run("INSERT INTO t VALUES (1)")
            return 42
        }
        #expect(value == 42)
        #expect(throws: Boom.self) {
            try db.transaction { connection in
                try connection.run("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        }
        #expect(try db.query("SELECT v FROM t").map { $0.int("v") } == [1])
        // The connection is usable again after the rollback.
        try db.transaction { connection in try connection.run("INSERT INTO t VALUES (3)") }
        #expect(try db.query("SELECT count(*) AS n FROM t").first?.int("n") == 2)
    }

    @Test func reentrantUseThrowsInsteadOfDeadlocking() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let error = #expect(throws: SQLiteError.self) {
            try db.withConnection { _ in try db.execute("SELECT 1") }
        }
        #expect(error?.call == "reentrant")
        let open = try db.withConnection { _ in db.isOpen }
        #expect(open)
        try db.withConnection { _ in db.close() }
        #expect(!db.isOpen)
    }

    @Test func invalidMigrationVersionsAreRefused() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let zero = #expect(throws: SQLiteError.self) { try db.migrate([SQLiteMigration(version: 0, sql: "")]) }
        #expect(zero?.call == "migrate")
        let repeated = #expect(throws: SQLiteError.self) {
            try db.migrate([SQLiteMigration(version: 1, sql: ""), SQLiteMigration(version: 1, sql: "")])
        }
        #expect(repeated?.message.contains("repeats") == true)
        #expect(try db.userVersion == 0)
        try db.migrate([])
    }

    private static let migrations = [
        SQLiteMigration(version: 1, sql: "CREATE TABLE a (id INTEGER PRIMARY KEY);"),
        SQLiteMigration(version: 2, sql: "ALTER TABLE a ADD COLUMN name TEXT; CREATE TABLE b (x INTEGER);"),
    ]

    @Test func migrationsFreshIncrementalAndIdempotent() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(at: path) }
        let db = try SQLiteDatabase(path: path)
        try db.migrate(Array(Self.migrations.prefix(1)))
        #expect(try db.userVersion == 1)
        try db.migrate(Self.migrations.reversed())  // order given does not matter
        #expect(try db.userVersion == 2)
        try db.run("INSERT INTO a (name) VALUES ('x')")
        try db.migrate(Self.migrations)  // re-run is a no-op
        #expect(try db.userVersion == 2)
        #expect(try db.query("SELECT name FROM a").first?.string("name") == "x")
    }

    @Test func migrationRefusesNewerDatabase() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.migrate(Self.migrations)
        let error = #expect(throws: SQLiteError.self) { try db.migrate(Array(Self.migrations.prefix(1))) }
        #expect(error?.call == "migrate")
        #expect(error?.message.contains("newer") == true)
        #expect(try db.userVersion == 2)
    }

    @Test func failingMigrationRollsBack() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let bad =
            Self.migrations + [
                SQLiteMigration(version: 3, sql: "CREATE TABLE c (x INTEGER); CREATE TABLE oops (;")
            ]
        let error = #expect(throws: SQLiteError.self) { try db.migrate(bad) }
        #expect(error?.call == "sqlite3_exec")
        #expect(error?.message.contains("migration 3") == true)
        #expect(error?.message.contains("syntax error") == true)
        #expect(try db.userVersion == 2)
        #expect(try db.query("SELECT name FROM sqlite_master WHERE name = 'c'").isEmpty)
    }

    @Test func constraintViolationCarriesSQLiteMessage() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE u (email TEXT UNIQUE NOT NULL)")
        try db.run("INSERT INTO u VALUES (\("a@example.com"))")
        let error = #expect(throws: SQLiteError.self) {
            try db.run("INSERT INTO u VALUES (\("a@example.com"))")
        }
        #expect(error?.isConstraintViolation == true)
        #expect(error?.isBusy == false)
        #expect(error?.code == 2067)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(error?.call == "sqlite3_step")
        #expect(error?.message.contains("UNIQUE constraint failed: u.email") == true)
        // The cached statement still works after the failure.
        try db.run("INSERT INTO u VALUES (\("b@example.com"))")
    }

    @Test func badSQLNamesPrepare() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        let error = #expect(throws: SQLiteError.self) { try db.query("SELEKT 1") }
        #expect(error?.call == "sqlite3_prepare_v2")
        #expect(error?.message.contains("syntax error") == true)
        #expect(error?.message.contains("SELEKT 1") == true)
        #expect(error?.description.contains("sqlite3_prepare_v2") == true)
    }

    @Test func closeIsIdempotentAndLaterCallsThrow() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.run("CREATE TABLE t (v)")
        db.close()
        db.close()
        #expect(!db.isOpen)
        let error = #expect(throws: SQLiteError.self) { try db.query("SELECT 1") }
        #expect(error?.call == "closed")
        #expect(throws: SQLiteError.self) { try db.withConnection { _ in 1 } }
    }

    @Test func openFailureIsAnError() {
        let error = #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: "/proc/herald-nope/x.db") }
        #expect(error != nil)
    }

    @Test func twoInstancesSeeEachOthersCommits() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(at: path) }
        let first = try SQLiteDatabase(path: path)
        let second = try SQLiteDatabase(path: path)
        try first.execute("CREATE TABLE t (v TEXT)")
        try first.transaction { connection in try connection.run("INSERT INTO t VALUES ('from first')") }
        #expect(try second.query("SELECT v FROM t").first?.string("v") == "from first")
        try second.run("INSERT INTO t VALUES ('from second')")
        #expect(try first.query("SELECT count(*) AS n FROM t").first?.int("n") == 2)
    }

    @Test func concurrentTasks() async throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(at: path) }
        let db = try SQLiteDatabase(path: path)
        try db.execute("CREATE TABLE t (task INTEGER, n INTEGER)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for n in 0..<50 {
                        if n % 10 == 0 {
                            try db.transaction { connection in
                                try connection.run("INSERT INTO t VALUES (\(task), \(-1))")
                                try connection.run("INSERT INTO t VALUES (\(task), \(-2))")
                            }
                        }
                        try db.run("INSERT INTO t VALUES (\(task), \(n))")
                        _ = try db.query("SELECT count(*) FROM t WHERE task = \(task)")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try db.query("SELECT count(*) AS n FROM t").first?.int("n") == 8 * (50 + 10))
    }
}
