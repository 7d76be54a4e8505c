import Foundation
import HeraldPostgres
import RouterTesting
import Testing

/// HeraldPostgres against a real PostgreSQL (``TestPostgres``): binding, types, errors with
/// SQLSTATE, transactions, LISTEN/NOTIFY and URL redaction.
@Suite struct PostgresDatabaseTests {
    func database() throws -> PostgresDatabase {
        try PostgresDatabase(url: try TestPostgres.start().createDatabase())
    }

    @Test func valuesAreBoundNotSpliced() throws {
        let db = try database()
        defer { db.close() }
        try db.execute("CREATE TABLE t(id TEXT PRIMARY KEY, n BIGINT, b BYTEA, f BOOLEAN, d DOUBLE PRECISION)")
        let hostile = "x'); DROP TABLE t; --"
        let bytes: [UInt8] = [0, 1, 0xFF, 0x5C, 0x22]
        try db.run("INSERT INTO t VALUES(\(hostile), \(Int64.max), \(bytes), \(true), \(1.5))")
        let row = try #require(try db.query("SELECT * FROM t WHERE id = \(hostile)").first)
        #expect(row.string("id") == hostile)
        #expect(row.int("n") == Int64.max)
        #expect(row.bytes("b") == bytes)
        #expect(row.bool("f") == true)
        #expect(row["d"] == .real(1.5))
        let none: String? = nil
        try db.run("INSERT INTO t(id, n) VALUES('null', \(none))")
        #expect(try db.query("SELECT n FROM t WHERE id = 'null'").first?["n"] == .null)
    }

    @Test func textArrayBindsOneParameter() throws {
        let db = try database()
        defer { db.close() }
        let ids = ["a", "b\"q", "c\\d", "e,f", "{g}"]
        let rows = try db.query("SELECT x FROM unnest(\(textArray: ids)::text[]) AS x ORDER BY x")
        #expect(rows.compactMap { $0.string("x") } == ids.sorted())
    }

    /// Elements that are empty, `NULL`, the word NULL, non-ASCII or full of quotes and backslashes
    /// come back exactly, in order.
    @Test func optionalTextArrayKeepsEveryElement() throws {
        let db = try database()
        defer { db.close() }
        let values: [String?] = ["", nil, "NULL", "é\"ü\\", "👋🏽 \\\"", " spaced ", "日本"]
        let rows = try db.query(
            "SELECT x, o FROM unnest(\(optionalTextArray: values)::text[]) WITH ORDINALITY AS t(x, o) ORDER BY o")
        #expect(rows.map { $0.string("x") } == values)
    }

    @Test func errorsCarrySQLState() throws {
        let db = try database()
        defer { db.close() }
        try db.execute("CREATE TABLE u(id TEXT PRIMARY KEY)")
        try db.run("INSERT INTO u VALUES(\("a"))")
        let error = #expect(throws: PostgresError.self) { try db.run("INSERT INTO u VALUES(\("a"))") }
        #expect(error?.sqlState == "23505")
        #expect(error?.isUniqueViolation == true)
        #expect(error?.isConnectionFailure == false)
        let syntax = #expect(throws: PostgresError.self) { try db.run("SELEC 1") }
        #expect(syntax?.sqlState == "42601")
    }

    /// A pipeline returns each statement's rows in order, runs as one implicit transaction (a
    /// failing statement undoes the ones before it and skips the rest), and leaves the connection
    /// usable; an advisory lock taken in it is held until it commits.
    @Test func aPipelineIsOneTransaction() throws {
        let db = try PostgresDatabase(url: try TestPostgres.start().createDatabase(), maximumConnections: 1)
        defer { db.close() }
        try db.execute("CREATE TABLE p(id TEXT PRIMARY KEY)")
        let rows = try db.pipeline([
            "INSERT INTO p VALUES(\("a"))", "SELECT id FROM p", "SELECT pg_advisory_xact_lock(\(Int64(7)))",
            "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
        ])
        #expect(rows.count == 4)
        #expect(rows[1].compactMap { $0.string("id") } == ["a"])
        #expect(rows[3].first?.int("n") == 1, "the lock is held inside the pipeline's transaction")
        let error = #expect(throws: PostgresError.self) {
            try db.pipeline([
                "INSERT INTO p VALUES(\("b"))", "INSERT INTO p VALUES(\("a"))", "INSERT INTO p VALUES(\("c"))",
            ])
        }
        #expect(error?.sqlState == "23505")
        // The same (only) connection again: "b" was rolled back, "c" never ran, the lock is gone.
        #expect(try db.query("SELECT id FROM p ORDER BY id").compactMap { $0.string("id") } == ["a"])
        // This session's locks only: other tests share the server, and their pipelines take locks too.
        #expect(
            try db.query(
                "SELECT COUNT(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
            ).first?.int("n") == 0)
    }

    @Test func transactionRollsBackOnError() throws {
        let db = try database()
        defer { db.close() }
        try db.execute("CREATE TABLE v(n BIGINT)")
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.transaction { c in
                try c.run("INSERT INTO v VALUES(\(1))")
                throw Boom()
            }
        }
        try db.transaction { c in
            try c.run("INSERT INTO v VALUES(\(2))")
            // A nested unit is a savepoint: only its own work is undone.
            _ = try? c.transaction { c -> Void in
                try c.run("INSERT INTO v VALUES(\(3))")
                throw Boom()
            }
        }
        #expect(try db.query("SELECT n FROM v ORDER BY n").compactMap { $0.int("n") } == [2])
    }

    @Test func listenerWakesOnNotifyAndTimesOut() async throws {
        let db = try database()
        defer { db.close() }
        let listener = try PostgresListener(database: db, channel: "herald_test")
        defer { listener.close() }
        let started = ContinuousClock.now
        #expect(try listener.wait(timeout: .milliseconds(200)).isEmpty)
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        // The sender is a thread of its own: `wait` blocks this task's thread, and the test
        // runner's other tests may hold the rest of the cooperative pool.
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.1)
            _ = try? db.run("SELECT pg_notify('herald_test', \("wake"))")
        }
        // The notification wakes the wait: it returns the payload, not the timeout's empty list.
        let payloads = try listener.wait(timeout: .seconds(60))
        #expect(payloads == ["wake"])
    }

    /// The statements a connection runs, by text, as `pg_prepared_statements` shows them.
    static func preparedTexts(_ c: PostgresConnection) throws -> [String] {
        try c.query("SELECT statement FROM pg_prepared_statements ORDER BY name").compactMap { $0.string("statement") }
    }

    /// Each distinct statement is prepared once per connection, in a pipeline and alone, and each
    /// run binds its own values.
    @Test func statementsArePreparedOncePerConnection() throws {
        let db = try database()
        defer { db.close() }
        try db.withConnection { c in
            try c.execute("CREATE TABLE p(id TEXT PRIMARY KEY, n BIGINT)")
            for i in 0..<8 {
                let rows = try c.pipeline([
                    "INSERT INTO p VALUES(\("k\(i)"), \(Int64(i)))",
                    "SELECT count(*) AS c, sum(n)::bigint AS s FROM p WHERE id LIKE \("k%")",
                ])
                #expect(rows[1].first?.int("c") == Int64(i + 1))
                #expect(rows[1].first?.int("s") == Int64(i * (i + 1) / 2))
                #expect(try c.query("SELECT n FROM p WHERE id = \("k\(i)")").first?.int("n") == Int64(i))
            }
            let texts = try Self.preparedTexts(c)
            #expect(texts.filter { $0.hasPrefix("INSERT INTO p") }.count == 1)
            #expect(texts.filter { $0.hasPrefix("SELECT count(*)") }.count == 1)
            #expect(texts.filter { $0.hasPrefix("SELECT n FROM p") }.count == 1)
        }
    }

    /// A failed statement in a pipeline leaves no half-known prepared statement behind: the same
    /// pipeline runs once the cause is gone.
    @Test func aFailedPipelineLeavesThePreparedStatementsUsable() throws {
        let db = try database()
        defer { db.close() }
        try db.withConnection { c in
            try c.execute("CREATE TABLE f(id TEXT PRIMARY KEY)")
            try c.run("INSERT INTO f VALUES(\("dup"))")
            let statements: [PostgresSQL] = [
                "INSERT INTO f VALUES(\("dup"))", "SELECT count(*) AS c FROM f WHERE id <> \("")",
            ]
            #expect(throws: PostgresError.self) { try c.pipeline(statements) }
            try c.run("DELETE FROM f WHERE id = \("dup")")
            #expect(try c.pipeline(statements)[1].first?.int("c") == 1)
        }
    }

    /// A prepared statement the server no longer has (`DEALLOCATE ALL`, as a pooler's fresh server
    /// connection would) or whose result type changed (`SELECT *` after `ALTER TABLE`) is prepared
    /// again, and the statement still runs.
    @Test func aLostOrOutdatedPreparedStatementIsPreparedAgain() throws {
        let db = try database()
        defer { db.close() }
        try db.withConnection { c in
            try c.execute("CREATE TABLE g(id TEXT PRIMARY KEY)")
            try c.run("INSERT INTO g VALUES(\("a"))")
            let select: PostgresSQL = "SELECT * FROM g WHERE id = \("a")"
            #expect(try c.query(select).count == 1)
            #expect(try c.pipeline([select])[0].count == 1)
            try c.execute("DEALLOCATE ALL")
            #expect(try c.query(select).count == 1)
            try c.execute("DEALLOCATE ALL")
            #expect(try c.pipeline([select])[0].count == 1)
            try c.execute("ALTER TABLE g ADD COLUMN extra TEXT DEFAULT 'x'")
            #expect(try c.query(select).first?.string("extra") == "x")
            try c.execute("ALTER TABLE g ADD COLUMN more TEXT DEFAULT 'y'")
            #expect(try c.pipeline([select])[0].first?.string("more") == "y")
        }
    }

    /// With `preparedStatements: false` (behind a pooler that does not keep them) nothing is prepared.
    @Test func preparedStatementsCanBeTurnedOff() throws {
        let db = try PostgresDatabase(url: try TestPostgres.start().createDatabase(), preparedStatements: false)
        defer { db.close() }
        try db.withConnection { c throws in
            #expect(try c.query("SELECT \(Int64(1))::bigint AS one").first?.int("one") == 1)
            #expect(try c.pipeline(["SELECT \(Int64(2))::bigint AS two"])[0].first?.int("two") == 2)
            #expect(try Self.preparedTexts(c).isEmpty)
        }
    }

    @Test func wrongPasswordFailsWithoutShowingIt() throws {
        let server = try TestPostgres.start()
        let url = "postgresql://nosuchuser:s3cretPW@127.0.0.1:\(server.port)/postgres"
        let error = #expect(throws: PostgresError.self) { try PostgresDatabase(url: url) }
        #expect(error?.isConnectionFailure == true)
        #expect(!(error?.description.contains("s3cretPW") ?? true))
        let unreachable = #expect(throws: PostgresError.self) {
            try PostgresDatabase(url: "postgresql://x:pw@127.0.0.1:1/db", connectTimeoutSeconds: 2)
        }
        #expect(unreachable?.isConnectionFailure == true)
    }

    @Test func redactedURLDropsPasswords() {
        #expect(
            PostgresURL.redacted("postgresql://u:p%40ss@h:5432/db?sslmode=require")
                == "postgresql://u@h:5432/db?sslmode=require")
        #expect(
            PostgresURL.redacted("postgresql://h/db?password=pw&sslmode=verify-full")
                == "postgresql://h/db?sslmode=verify-full")
        #expect(PostgresURL.redacted("postgresql://u@h/db") == "postgresql://u@h/db")
    }
}
