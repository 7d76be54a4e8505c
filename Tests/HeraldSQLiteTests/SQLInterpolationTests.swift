import HeraldSQLite
import Testing

/// `SQL` string interpolation: every interpolated value becomes a `?` placeholder with a bound value.
@Suite struct SQLInterpolationTests {
    @Test func interpolatedValuesBecomePlaceholdersWithBindings() {
        let name = "o'neil"
        let count: Int64 = 42
        let ratio = 0.5
        let bytes: [UInt8] = [0, 255]
        let missing: String? = nil
        let sql: SQL = "SELECT \(name), \(count), \(ratio), \(bytes), \(missing), \(7), \(true)"
        #expect(sql.text == "SELECT ?, ?, ?, ?, ?, ?, ?")
        #expect(
            sql.bindings == [
                .text("o'neil"), .integer(42), .real(0.5), .bytes([0, 255]), .null, .integer(7), .integer(1),
            ])
    }

    @Test func plainLiteralHasNoBindings() {
        let sql: SQL = "SELECT 1 WHERE 'a' = 'a'"
        #expect(sql.text == "SELECT 1 WHERE 'a' = 'a'")
        #expect(sql.bindings.isEmpty)
    }

    @Test func fragmentsListsAndJoinsKeepBindingsInOrder() {
        let conditions: [SQL] = ["a = \("x")", "b = \(2)"]
        var sql: SQL = "SELECT * FROM t WHERE \(conditions.joined(separator: " AND "))"
        sql.append(" AND c IN (\(list: ["p", "q"])) LIMIT \(10)")
        #expect(sql.text == "SELECT * FROM t WHERE a = ? AND b = ? AND c IN (?, ?) LIMIT ?")
        #expect(sql.bindings == [.text("x"), .integer(2), .text("p"), .text("q"), .integer(10)])
        let empty: SQL = "IN (\(list: [String]()))"
        #expect(empty.text == "IN ()")
        #expect(empty.bindings.isEmpty)
    }

    @Test func descriptionNeverShowsValues() {
        let secret = "s3cr3t-token"
        let sql: SQL = "UPDATE t SET token = \(secret)"
        #expect(!sql.description.contains(secret))
        #expect(sql.description.contains("1 bound"))
    }

    /// Each SQLite type round-trips through a bound value: text, int64, double, blob and null.
    @Test func everyTypeIsBoundAndReadBack() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (s TEXT, i INTEGER, r REAL, b BLOB, n TEXT)")
        let text = "héllo 🌍"
        let big = Int64.min
        let real = -1.0e-300
        let blob: [UInt8] = [0, 1, 2, 0xFF]
        let none: [UInt8]? = nil
        try db.run("INSERT INTO t (s, i, r, b, n) VALUES (\(text), \(big), \(real), \(blob), \(none))")
        let row = try #require(
            try db.queryOne(
                """
                SELECT s, i, r, b, n, typeof(s) AS ts, typeof(i) AS ti, typeof(r) AS tr, typeof(b) AS tb,
                  typeof(n) AS tn FROM t WHERE s = \(text) AND i = \(big)
                """))
        #expect(row.string("s") == text)
        #expect(row.int("i") == big)
        #expect(row.double("r") == real)
        #expect(row.bytes("b") == blob)
        #expect(row["n"] == .null)
        #expect(
            [row.string("ts"), row.string("ti"), row.string("tr"), row.string("tb"), row.string("tn")] == [
                "text", "integer", "real", "blob", "null",
            ])
    }

    /// A value holding quotes and SQL is bound, not spliced: the table survives and the text is stored as is.
    @Test func valueWithQuotesIsBoundNotSpliced() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v TEXT)")
        let hostile = "x'); DROP TABLE t; --"
        let sql: SQL = "INSERT INTO t (v) VALUES (\(hostile))"
        #expect(!sql.text.contains("DROP"))
        try db.run(sql)
        let quoted = #"it's "quoted" \ 'twice''"#
        try db.run("INSERT INTO t (v) VALUES (\(quoted))")
        #expect(try db.query("SELECT v FROM t ORDER BY rowid").map { $0.string("v") } == [hostile, quoted])
        #expect(try db.queryOne("SELECT count(*) AS n FROM t WHERE v = \(hostile)")?.int("n") == 1)
    }

    /// The same statement with other values reuses one prepared statement (the cache key is the text).
    @Test func sameTextWithOtherValuesReusesThePreparedStatement() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v INTEGER)")
        try db.withConnection { connection in
            let before = connection.cachedStatementCount
            for value in 0..<5 { try connection.run("INSERT INTO t (v) VALUES (\(value))") }
            #expect(connection.cachedStatementCount == before + 1)
        }
        #expect(try db.queryOne("SELECT sum(v) AS s FROM t")?.int("s") == 10)
    }

    /// A `?` typed into the text has no value: refused with SQLITE_RANGE, nothing is written.
    @Test func placeholderWithoutValueIsRefused() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (a TEXT, b TEXT)")
        let error = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (?, \("b"))") }
        #expect(error?.call == "sqlite3_bind")
        #expect(try db.queryOne("SELECT count(*) AS n FROM t")?.int("n") == 0)
    }
}

/// The one transaction helper: BEGIN IMMEDIATE at the top, a savepoint inside, and rehearsals.
@Suite struct SQLiteTransactionTests {
    private struct Boom: Error {}

    @Test func nestedFailureUndoesOnlyItsOwnWork() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v INTEGER)")
        try db.transaction { c in
            #expect(c.isInTransaction)
            try c.run("INSERT INTO t VALUES (\(1))")
            #expect(throws: Boom.self) {
                try c.transaction { c in
                    try c.run("INSERT INTO t VALUES (\(2))")
                    throw Boom()
                }
            }
            try c.transaction { c in try c.run("INSERT INTO t VALUES (\(3))") }
            #expect(c.isInTransaction)
        }
        #expect(try db.query("SELECT v FROM t ORDER BY v").map { $0.int("v") } == [1, 3])
        #expect(try db.withConnection { c in c.isInTransaction } == false)
    }

    @Test func rehearsalIsAlwaysRolledBack() throws {
        let db = try SQLiteDatabase(path: ":memory:")
        try db.execute("CREATE TABLE t (v INTEGER UNIQUE)")
        // Inside a transaction: a savepoint, rolled back; the outer work stays.
        let seen = try db.transaction { c in
            try c.run("INSERT INTO t VALUES (\(1))")
            return try c.transaction(.rollBack) { c in
                try c.run("INSERT INTO t VALUES (\(2))")
                return try c.queryOne("SELECT count(*) AS n FROM t")?.int("n")
            }
        }
        #expect(seen == 2)
        #expect(try db.query("SELECT v FROM t").map { $0.int("v") } == [1])
        // At the top level: a whole transaction, rolled back; a failing rehearsal rethrows.
        try db.withConnection { c in
            try c.transaction(.rollBack) { c in try c.run("INSERT INTO t VALUES (\(5))") }
            let error = #expect(throws: SQLiteError.self) {
                try c.transaction(.rollBack) { c in try c.run("INSERT INTO t VALUES (\(1))") }
            }
            #expect(error?.isConstraintViolation == true)
            #expect(!c.isInTransaction)
        }
        #expect(try db.query("SELECT v FROM t").map { $0.int("v") } == [1])
    }
}
