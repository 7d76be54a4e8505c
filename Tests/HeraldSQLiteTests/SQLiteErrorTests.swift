import Foundation
import HeraldSQLite
import Testing

/// An error on an open database names its file and says what a person can do about it.
@Suite struct SQLiteErrorTests {
    @Test func aLockHeldByAnotherConnectionNamesTheFileAndTheLock() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sqlite-err-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/locked.db"
        let holder = try SQLiteDatabase(path: path)
        try holder.execute("CREATE TABLE t (x INTEGER)")
        try holder.execute("BEGIN EXCLUSIVE")
        let other = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 20)
        #expect {
            try other.execute("INSERT INTO t VALUES (1)")
        } throws: { error in
            guard let e = error as? SQLiteError else { return false }
            return e.isBusy && e.path == path && e.description.hasPrefix(path + ": ")
                && e.description.contains("another process holds the database lock")
        }
        // Inside a transaction too (the store's writes all run in one).
        #expect {
            try other.transaction { c in try c.execute("INSERT INTO t VALUES (2)") }
        } throws: { error in
            (error as? SQLiteError)?.description.hasPrefix(path + ": ") == true
        }
        try holder.execute("ROLLBACK")
    }

    @Test func aFullDiskIsSaidSo() {
        let full = SQLiteError(code: 13, call: "sqlite3_step", message: "database or disk is full")
        #expect(full.isDiskFull)
        #expect(full.description.hasSuffix("(no space left on the device)"))
        let shm = SQLiteError(code: 4874, call: "sqlite3_prepare_v2", message: "disk I/O error", systemErrno: ENOSPC)
        #expect(shm.isDiskFull)
        #expect(shm.at("/x/herald.db").description.hasPrefix("/x/herald.db: sqlite3_prepare_v2 failed (4874)"))
    }
}
