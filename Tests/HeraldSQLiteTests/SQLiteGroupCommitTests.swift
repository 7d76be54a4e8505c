import Foundation
import HeraldSQLite
import HeraldSync
import Testing

/// Group commit and the reading connection of ``SQLiteDatabase`` (issue 35's store contention): real
/// files, real threads; the tests wait on semaphores and queue lengths, never on the clock.
@Suite struct SQLiteGroupCommitTests {
    private struct Refused: Error, Equatable { let index: Int }

    private static func fileDatabase() throws -> (SQLiteDatabase, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-groupcommit-\(UUID().uuidString)")
        let path = directory.appendingPathComponent("test.db").path
        let db = try SQLiteDatabase(path: path)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL, value TEXT NOT NULL)")
        return (db, directory.path)
    }

    /// Waits (bounded by tries, not time) until `condition` holds.
    private static func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<20_000 {
            if condition() { return true }
            usleep(500)
        }
        return condition()
    }

    @Test func queuedTransactionsCommitTogetherAndAFailingBodyUndoesOnlyItsOwnWrites() throws {
        let (db, directory) = try Self.fileDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let callers = 12
        let results = Locked<[Int: Result<Int, any Error>]>([:])
        let finished = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        // One thread holds the connection while the others queue their transactions behind it.
        Thread.detachNewThread {
            _ = try? db.withConnection { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        for index in 0..<callers {
            Thread.detachNewThread {
                let result = Result { () throws -> Int in
                    try db.transaction { c in
                        try c.run("INSERT INTO t (caller, value) VALUES (\(index), 'first')")
                        try c.run("INSERT INTO t (caller, value) VALUES (\(index), 'second')")
                        if index == 5 { throw Refused(index: index) }
                        return index * 10
                    }
                }
                results.withLock { $0[index] = result }
                finished.signal()
            }
        }
        #expect(Self.waitUntil { db.queuedTransactions == callers })
        release.signal()
        for _ in 0..<callers { finished.wait() }

        let answers = results.withLock { $0 }
        for index in 0..<callers {
            if index == 5 {
                #expect(throws: Refused(index: 5)) { try answers[index]?.get() }
            } else {
                #expect(try answers[index]?.get() == index * 10)
            }
        }
        #expect(db.groupCommits >= 1)
        let rows = try db.query("SELECT caller, COUNT(*) AS n FROM t GROUP BY caller ORDER BY caller")
        #expect(rows.map { $0.int("caller") } == (0..<callers).filter { $0 != 5 }.map { Int64($0) })
        #expect(rows.allSatisfy { $0.int("n") == 2 })
        // Durable: another connection of the file sees the same rows.
        let other = try SQLiteDatabase(path: db.path, mode: .readOnly)
        #expect(try other.queryOne("SELECT COUNT(*) AS n FROM t")?.int("n") == Int64(2 * (callers - 1)))
        other.close()
    }

    @Test func manyThreadsWritingAtOnceLoseNothing() throws {
        let (db, directory) = try Self.fileDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let threads = 8
        let perThread = 150
        let done = DispatchSemaphore(value: 0)
        let failures = Locked(0)
        for thread in 0..<threads {
            Thread.detachNewThread {
                for i in 0..<perThread {
                    do {
                        let inserted = try db.transaction { c in
                            try c.run("INSERT INTO t (caller, value) VALUES (\(thread), \("v\(i)"))")
                            return c.lastInsertRowID
                        }
                        // The caller's own write is visible to its next read, on the reading connection.
                        let row = try db.queryOne("SELECT value FROM t WHERE id = \(inserted)")
                        if row?.string("value") != "v\(i)" { failures.withLock { $0 += 1 } }
                    } catch {
                        failures.withLock { $0 += 1 }
                    }
                }
                done.signal()
            }
        }
        for _ in 0..<threads { done.wait() }
        #expect(failures.withLock { $0 } == 0)
        #expect(try db.queryOne("SELECT COUNT(*) AS n FROM t")?.int("n") == Int64(threads * perThread))
        #expect(db.queuedTransactions == 0)
    }

    @Test func readsDoNotWaitForTheWriter() throws {
        let (db, directory) = try Self.fileDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(db.readsOnSecondConnection)
        try db.transaction { c in try c.run("INSERT INTO t (caller, value) VALUES (1, 'committed')") }
        let read = DispatchSemaphore(value: 0)
        let seen = Locked<String?>(nil)
        // While the writer holds the connection in an open transaction, a read on another thread
        // completes and sees the last committed state, not the uncommitted write.
        let waited = try db.transaction { c -> DispatchTimeoutResult in
            try c.run("INSERT INTO t (caller, value) VALUES (2, 'uncommitted')")
            Thread.detachNewThread {
                let rows = try? db.query("SELECT value FROM t ORDER BY id")
                seen.withLock { $0 = rows?.compactMap { $0.string("value") }.joined(separator: ",") }
                read.signal()
            }
            return read.wait(timeout: .now() + 60)
        }
        #expect(waited == .success)
        #expect(seen.withLock { $0 } == "committed")
        #expect(try db.query("SELECT COUNT(*) AS n FROM t").first?.int("n") == 2)
    }

    @Test func writingStatementsAndPragmasStayOnTheWriter() throws {
        let (db, directory) = try Self.fileDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inserted = try db.query("INSERT INTO t (caller, value) VALUES (3, 'x') RETURNING id")
        #expect(inserted.count == 1)
        try db.execute("PRAGMA cache_size = -4096")
        // Read on the writer: the reading connection has its own (default) cache size.
        #expect(try db.queryOne("PRAGMA cache_size")?[0] == .integer(-4096))
        #expect(try db.queryOne("SELECT value FROM t WHERE caller = 3")?.string("value") == "x")
    }

    @Test func memoryAndReadOnlyDatabasesReadOnTheirOneConnection() throws {
        let memory = try SQLiteDatabase(path: ":memory:")
        #expect(!memory.readsOnSecondConnection)
        try memory.execute("CREATE TABLE t (v TEXT)")
        try memory.transaction { c in try c.run("INSERT INTO t VALUES ('m')") }
        #expect(try memory.queryOne("SELECT v FROM t")?.string("v") == "m")

        let (db, directory) = try Self.fileDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let readOnly = try SQLiteDatabase(path: db.path, mode: .readOnly)
        #expect(!readOnly.readsOnSecondConnection)
        #expect(try readOnly.queryOne("SELECT COUNT(*) AS n FROM t")?.int("n") == 0)
        readOnly.close()
    }

    @Test func readsAfterCloseAndReentrantReadsAreErrors() throws {
        let (db, directory) = try Self.fileDatabase()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try db.queryOne("SELECT COUNT(*) AS n FROM t")?.int("n") == 0)
        #expect(throws: SQLiteError.self) {
            try db.withConnection { _ in try db.query("SELECT COUNT(*) FROM t") }
        }
        #expect(throws: SQLiteError.self) {
            try db.transaction { _ in try db.transaction { _ in 1 } }
        }
        db.close()
        #expect(throws: SQLiteError.self) { try db.query("SELECT COUNT(*) FROM t") }
        #expect(throws: SQLiteError.self) { try db.transaction { _ in 1 } }
        #expect(db.queuedTransactions == 0)
    }
}
