import Foundation
import HeraldSQLite
import Testing

/// Open modes, file inspection and atomic creation: the pieces a store uses to open only what it
/// should and to create only what is missing.
@Suite struct SQLiteOpenModeTests {
    private func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-open-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func inspectsMissingEmptyForeignAndSQLiteFiles() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try SQLiteDatabase.inspectFile(atPath: dir + "/none.db") == .missing)
        #expect(FileManager.default.createFile(atPath: dir + "/empty.db", contents: Data()))
        #expect(try SQLiteDatabase.inspectFile(atPath: dir + "/empty.db") == .empty)
        #expect(FileManager.default.createFile(atPath: dir + "/text.db", contents: Data("devices: none\n".utf8)))
        #expect(try SQLiteDatabase.inspectFile(atPath: dir + "/text.db") == .notSQLite)
        // Shorter than the 16-byte header.
        #expect(FileManager.default.createFile(atPath: dir + "/short.db", contents: Data("SQLite".utf8)))
        #expect(try SQLiteDatabase.inspectFile(atPath: dir + "/short.db") == .notSQLite)
        #expect(try SQLiteDatabase.inspectFile(atPath: dir) == .notSQLite)
        let db = try SQLiteDatabase(path: dir + "/real.db")
        try db.execute("CREATE TABLE t(x)")
        db.close()
        #expect(try SQLiteDatabase.inspectFile(atPath: dir + "/real.db") == .sqlite)
    }

    @Test func readWriteWithoutCreateRefusesAMissingFileAndCreatesNothing() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: dir + "/missing.db", mode: .readWrite) }
        #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: dir + "/missing.db", mode: .readOnly) }
        #expect(!FileManager.default.fileExists(atPath: dir + "/missing.db"))
    }

    @Test func readOnlyReadsAndRefusesWrites() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/ro.db"
        let writer = try SQLiteDatabase(path: path)
        try writer.execute("CREATE TABLE t(x); INSERT INTO t VALUES (42)")
        #expect(try writer.isReadOnly == false)
        writer.close()
        let reader = try SQLiteDatabase(path: path, mode: .readOnly)
        #expect(try reader.isReadOnly)
        #expect(try reader.queryOne("SELECT x FROM t")?[0] == .integer(42))
        let error = #expect(throws: SQLiteError.self) { try reader.run("INSERT INTO t VALUES (1)") }
        #expect(error?.primaryCode == 8)  // SQLITE_READONLY
        reader.close()
        #expect(try SQLiteDatabase(path: path).queryOne("SELECT count(*) FROM t")?[0] == .integer(1))
    }

    @Test func readOnlyOpensAPathThatNeedsURIEscaping() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/odd name?#%.db"
        let writer = try SQLiteDatabase(path: path)
        try writer.execute("CREATE TABLE t(x); INSERT INTO t VALUES (7)")
        writer.close()
        let reader = try SQLiteDatabase(path: path, mode: .readOnly)
        #expect(try reader.queryOne("SELECT x FROM t")?[0] == .integer(7))
    }

    @Test func createAtomicallyPublishesACompleteFileOnceAndLeavesNoTemporaries() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/new/store.db"
        let created = try SQLiteDatabase.createAtomically(path: path) { (db) throws(SQLiteError) in
            try db.execute("CREATE TABLE marker(x); INSERT INTO marker VALUES ('first')")
        }
        #expect(created)
        // The file is complete on disk (its WAL was checkpointed before it was linked into place).
        #expect(try SQLiteDatabase.inspectFile(atPath: path) == .sqlite)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        // A second creator loses the race and changes nothing.
        let again = try SQLiteDatabase.createAtomically(path: path) { (db) throws(SQLiteError) in
            try db.execute("CREATE TABLE marker(x); INSERT INTO marker VALUES ('second')")
        }
        #expect(!again)
        #expect(try SQLiteDatabase(path: path).queryOne("SELECT x FROM marker")?[0] == .text("first"))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir + "/new").filter {
            $0.contains("creating")
        }
        #expect(leftovers.isEmpty)
    }

    @Test func aFailedInitializationPublishesNothing() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/store.db"
        #expect(throws: SQLiteError.self) {
            _ = try SQLiteDatabase.createAtomically(path: path) { (db) throws(SQLiteError) in
                try db.execute("CREATE TABLE broken(")
            }
        }
        #expect(try SQLiteDatabase.inspectFile(atPath: path) == .missing)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }
}
