import CSQLite
import Foundation
import HeraldSync
import Synchronization

/// How ``SQLiteDatabase/init(path:mode:busyTimeoutMilliseconds:)`` opens its file.
public enum SQLiteOpenMode: Sendable, Equatable {
    /// Read and write, creating the file (and its directory) when missing.
    case readWriteCreate
    /// Read and write an existing file; a missing file is an error.
    case readWrite
    /// Read an existing file; every write fails with `SQLITE_READONLY`.
    case readOnly
}

/// What ``SQLiteDatabase/inspectFile(atPath:)`` found at a path.
public enum SQLiteFileKind: Sendable, Equatable {
    /// No file.
    case missing
    /// A file of 0 bytes.
    case empty
    /// A file that does not start with the SQLite header (or is not a regular file).
    case notSQLite
    /// A file that starts with the SQLite header.
    case sqlite
}

/// A SQLite database file (or `":memory:"`) behind one connection, safe to share between tasks.
///
/// Every operation takes an internal `Locked` (a POSIX mutex), so calls are serialised; the connection is opened with
/// `SQLITE_OPEN_NOMUTEX` because SQLite's own locking would be redundant. Several `SQLiteDatabase` instances
/// (or processes) may open the same file; they coordinate through SQLite's file locks, WAL and `busy_timeout`.
///
/// Two things keep the one writing connection from being the bottleneck under load: reads through
/// ``query(_:)`` go to a second connection of the same file (``readsOnSecondConnection``, WAL readers
/// do not wait for the writer), and concurrent ``transaction(_:)`` calls are committed in groups.
///
/// Calling back into the same database from inside ``withConnection(_:)`` or ``transaction(_:)`` throws
/// (call `"reentrant"`) instead of deadlocking; use the borrowed ``SQLiteConnection`` instead.
public final class SQLiteDatabase: Sendable {
    /// The path given to ``init(path:busyTimeoutMilliseconds:)``.
    public let path: String

    private let lock = Locked<Void>(())
    /// The second connection ``query(_:)`` reads through (``readsOnSecondConnection``), opened at the
    /// first read.
    private let reader = Locked<ReaderState>(.untried)
    private let readerAllowed: Bool
    private let busyTimeoutMilliseconds: Int
    /// Bodies of ``transaction(_:)`` waiting for the connection, in arrival order (group commit).
    private let waiting = Locked<[any GroupedWork]>([])
    private let groupCommitCount = Atomic<Int>(0)
    private let owner = Atomic<UInt>(0)
    private let box: ConnectionBox

    /// Opens the file; `":memory:"` allowed. With ``SQLiteOpenMode/readWriteCreate`` (the default) a
    /// missing file is created (and its parent directory); with ``SQLiteOpenMode/readWrite`` and
    /// ``SQLiteOpenMode/readOnly`` a missing file is an error. Sets `journal_mode=WAL` (for writable
    /// files), `synchronous=NORMAL`, `foreign_keys=ON` and `busy_timeout` (default 5000 ms).
    ///
    /// A read-only open never writes: a WAL file that cannot get its `-shm` index (the directory is not
    /// writable) is opened `immutable` when it has no `-wal` file waiting to be checkpointed.
    public init(path: String, mode: SQLiteOpenMode = .readWriteCreate, busyTimeoutMilliseconds: Int = 5000)
        throws(SQLiteError)
    {
        self.path = path
        let inMemory = path.isEmpty || path == ":memory:"
        readerAllowed = !inMemory && mode != .readOnly
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        if !inMemory && mode == .readWriteCreate {
            try Self.createParentDirectory(of: path)
        }
        var handle: OpaquePointer?
        if mode == .readOnly && !inMemory {
            handle = try Self.openReadOnly(path)
        } else {
            var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
            if mode == .readWriteCreate { flags |= SQLITE_OPEN_CREATE }
            let rc = sqlite3_open_v2(path, &handle, flags, nil)
            guard rc == SQLITE_OK, handle != nil else {
                throw Self.openFailure(handle, rc, path: path)
            }
        }
        guard let handle else {
            throw SQLiteError(code: SQLITE_CANTOPEN, call: "sqlite3_open_v2", message: "no handle (path: \(path))")
        }
        sqlite3_extended_result_codes(handle, 1)
        let timeout = Int32(clamping: max(0, busyTimeoutMilliseconds))
        let connection = SQLiteConnection(handle: handle)
        let busyRC = sqlite3_busy_timeout(handle, timeout)
        if busyRC != SQLITE_OK {
            let error = SQLiteError(
                code: busyRC, call: "sqlite3_busy_timeout", message: SQLiteConnection.message(handle))
            connection.close()
            throw error
        }
        do throws(SQLiteError) {
            if !inMemory && mode != .readOnly {
                let mode = try connection.queryOne("PRAGMA journal_mode=WAL")?.string("journal_mode") ?? ""
                if mode.lowercased() != "wal" {
                    throw SQLiteError(
                        code: SQLITE_ERROR, call: "PRAGMA journal_mode",
                        message: "could not enable WAL; journal_mode is \"\(mode)\" (path: \(path))")
                }
            }
            try connection.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        } catch {
            connection.close()
            throw error
        }
        box = ConnectionBox(connection)
    }

    deinit {
        box.connection?.close()
        reader.withLock { state in
            if case .open(let connection) = state { connection.close() }
        }
    }

    /// `true` when the connection cannot write (opened ``SQLiteOpenMode/readOnly``, or SQLite found the
    /// file or its directory read-only).
    public var isReadOnly: Bool {
        get throws {
            try lockedTyped { (connection) throws(SQLiteError) in try connection.isReadOnly }
        }
    }

    /// What is at `path` before it is opened: nothing, an empty file, a file that is not SQLite (its
    /// first 16 bytes are not `"SQLite format 3\0"`), or an SQLite database file.
    public static func inspectFile(atPath path: String) throws(SQLiteError) -> SQLiteFileKind {
        var info = stat()
        if stat(path, &info) != 0 {
            let code = errno
            if code == ENOENT { return .missing }
            throw SQLiteError(
                code: SQLITE_CANTOPEN, call: "stat",
                message: "cannot inspect \(path): \(String(cString: strerror(code)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return .notSQLite }
        if info.st_size == 0 { return .empty }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SQLiteError(code: SQLITE_CANTOPEN, call: "open", message: "cannot read \(path)")
        }
        defer { try? handle.close() }
        let header: Data
        do {
            header = try handle.read(upToCount: 16) ?? Data()
        } catch {
            throw SQLiteError(
                code: SQLITE_IOERR, call: "read", message: "cannot read \(path): \(error.localizedDescription)")
        }
        return Array(header) == Array("SQLite format 3\0".utf8) ? .sqlite : .notSQLite
    }

    /// Creates a new database at `path` without ever exposing a half-made file: `initialize` runs on a
    /// temporary file in the same directory, which is closed (checkpointing its WAL) and then linked to
    /// `path`. Returns `false` when another process created `path` first (the temporary file is then
    /// discarded and the caller opens the existing one).
    public static func createAtomically(
        path: String, _ initialize: (SQLiteDatabase) throws(SQLiteError) -> Void
    ) throws(SQLiteError) -> Bool {
        try createParentDirectory(of: path)
        let temporary = "\(path).creating-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer {
            for suffix in ["", "-wal", "-shm", "-journal"] { unlink(temporary + suffix) }
        }
        do {
            let database = try SQLiteDatabase(path: temporary)
            try initialize(database)
            database.close()
        }
        if link(temporary, path) == 0 { return true }
        let code = errno
        if code == EEXIST { return false }
        // A file system without hard links: rename, unless someone else got there first.
        guard code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == ENOSYS else {
            throw SQLiteError(
                code: SQLITE_CANTOPEN, call: "link",
                message: "cannot create \(path): \(String(cString: strerror(code)))")
        }
        if FileManager.default.fileExists(atPath: path) { return false }
        guard rename(temporary, path) == 0 else {
            let renameCode = errno
            throw SQLiteError(
                code: SQLITE_CANTOPEN, call: "rename",
                message: "cannot create \(path): \(String(cString: strerror(renameCode)))")
        }
        return true
    }

    /// Runs `body` with exclusive use of the connection. Calls are serialised by an internal `Locked` (a POSIX mutex);
    /// errors thrown by `body` are rethrown unchanged, except that an ``SQLiteError`` names this file.
    /// The connection must not escape `body`.
    public func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let result = try locked { connection in Result { () throws -> T in try body(connection) } }
        return try naming(result)
    }

    /// The result's value; an ``SQLiteError`` is rethrown naming this file.
    private func naming<T>(_ result: Result<T, any Error>) throws -> T {
        do {
            return try result.get()
        } catch let error as SQLiteError {
            throw error.at(path)
        }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT` (``SQLiteConnection/transaction(_:_:)``, the one
    /// transaction helper). Any error thrown by `body` (or by `COMMIT`) rolls the transaction back and is
    /// rethrown (an ``SQLiteError`` naming this file).
    ///
    /// **Group commit.** Calls that arrive while the connection is busy queue up; the next thread to get
    /// the connection runs every queued body (up to ``groupCommitLimit``, in arrival order) in one
    /// `BEGIN IMMEDIATE … COMMIT`, each body inside a savepoint of its own. A body that throws undoes only
    /// its own savepoint and its caller gets the error; the others commit. Every caller returns after the
    /// `COMMIT` that made its writes durable, with its own body's value, exactly as if it had run alone.
    /// One commit then writes the pages the group changed once, where separate transactions would write
    /// them (and take the lock) once each: under load (a waiting send's insert, claim, result and
    /// suppression; a Pulse push's ledger) that is most of the store's time. A failure that ends the
    /// shared transaction (the `COMMIT` itself, or an I/O error that makes SQLite roll everything back)
    /// fails every body of the group that had not already failed, with that error. A lone call runs as
    /// before, in a transaction of its own.
    public func transaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        if owner.load(ordering: .acquiring) == Self.currentThread { throw Self.reentrantError }
        return try withoutActuallyEscaping(body) { body in
            let request = GroupedTransaction<T>(body)
            waiting.withLock { $0.append(request) }
            do {
                try locked { connection in
                    // Run the queue's head in groups until this call's body has run (FIFO, so it is in
                    // the first group unless more than `groupCommitLimit` queued before it).
                    while !request.isDone {
                        let group = waiting.withLock { queue -> [any GroupedWork] in
                            let count = min(queue.count, Self.groupCommitLimit)
                            let group = Array(queue.prefix(count))
                            queue.removeFirst(count)
                            return group
                        }
                        if group.isEmpty { break }
                        if group.count > 1 { groupCommitCount.add(1, ordering: .relaxed) }
                        Self.runGroup(group, connection)
                    }
                }
            } catch {
                // Closed: take the body back out of the queue so it does not outlive this call.
                waiting.withLock { queue in queue.removeAll { $0 === request } }
                if !request.isDone {
                    request.discard()
                    throw error
                }
            }
            guard let result = request.result else { throw SQLiteError.closed }
            return try naming(result)
        }
    }

    /// How many ``transaction(_:)`` calls are queued for the connection now (diagnostics and tests).
    public var queuedTransactions: Int { waiting.withLock { $0.count } }

    /// How many shared transactions ``transaction(_:)`` has committed with more than one caller's body
    /// in them since the database was opened (diagnostics and tests).
    public var groupCommits: Int { groupCommitCount.load(ordering: .relaxed) }

    /// The most bodies ``transaction(_:)`` runs in one shared transaction.
    public static let groupCommitLimit = 64

    /// Runs `group`'s bodies: one alone in its own transaction; several in one transaction, each in a
    /// savepoint (``SQLiteConnection/transaction(_:_:)`` nests as a savepoint inside an open transaction).
    private static func runGroup(_ group: [any GroupedWork], _ connection: SQLiteConnection) {
        guard group.count > 1 else {
            group.first?.run(connection)
            return
        }
        do {
            try connection.run("BEGIN IMMEDIATE")
        } catch {
            for work in group { work.fail(error) }
            return
        }
        var committed: [any GroupedWork] = []
        committed.reserveCapacity(group.count)
        for (index, work) in group.enumerated() {
            if work.run(connection) {
                committed.append(work)
                continue
            }
            if !connection.isInTransaction {
                // The body's error ended the whole transaction (SQLite rolls back on an I/O error or a
                // full disk): the bodies before it lost their writes; the rest start a new group.
                let lost = SQLiteError(
                    code: SQLITE_ABORT, call: "group commit",
                    message: "rolled back with the transaction it shared with a failed write")
                for done in committed { done.fail(lost) }
                runGroup(Array(group[(index + 1)...]), connection)
                return
            }
        }
        do {
            try connection.run("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            for work in committed { work.fail(error) }
        }
    }

    /// Runs one or more statements without bindings (`sqlite3_exec`).
    public func execute(_ sql: String) throws(SQLiteError) {
        try lockedTyped { (connection) throws(SQLiteError) in try connection.execute(sql) }
    }

    /// Runs one statement, binding its interpolated values (see ``SQL``), discarding result rows.
    public func run(_ sql: SQL) throws(SQLiteError) {
        try lockedTyped { (connection) throws(SQLiteError) in try connection.run(sql) }
    }

    /// Runs one statement, binding its interpolated values, and returns its rows.
    ///
    /// A statement that only reads (`sqlite3_stmt_readonly`) runs on the file's second, reading
    /// connection (``readsOnSecondConnection``), so it neither waits for nor holds up the writes;
    /// every other statement runs on the writing connection.
    public func query(_ sql: SQL) throws(SQLiteError) -> [SQLiteRow] {
        if let rows = try readerQuery(sql) { return rows }
        return try lockedTyped { (connection) throws(SQLiteError) in try connection.query(sql) }
    }

    /// Runs one statement, binding its interpolated values, and returns its first row, if any (a
    /// read runs on the reading connection, as in ``query(_:)``).
    public func queryOne(_ sql: SQL) throws(SQLiteError) -> SQLiteRow? {
        try query(sql).first
    }

    /// `true` when reads through ``query(_:)`` and ``queryOne(_:)`` go to a second connection of their
    /// own: a file opened for writing (not `":memory:"`, not ``SQLiteOpenMode/readOnly``), whose WAL
    /// lets a reader see every committed write without waiting for the writer. A write committed
    /// before a read starts is always seen by it.
    public var readsOnSecondConnection: Bool { readerAllowed }

    /// The reading connection's answer for a read-only `sql`, or `nil` when the statement writes or
    /// there is no reading connection (then the caller runs it on the writer).
    private func readerQuery(_ sql: SQL) throws(SQLiteError) -> [SQLiteRow]? {
        // PRAGMAs answer for the connection that runs them (`data_version`, `cache_size`): the writer's.
        guard readerAllowed, !Self.isPragma(sql.text) else { return nil }
        if owner.load(ordering: .acquiring) == Self.currentThread { throw Self.reentrantError }
        let outcome: Result<[SQLiteRow]?, SQLiteError> = reader.withLock { state in
            switch state {
            case .closed: return .failure(SQLiteError.closed)
            case .unavailable: return .success(nil)
            case .untried:
                guard let opened = try? Self.openReader(path, busyTimeoutMilliseconds: busyTimeoutMilliseconds) else {
                    state = .unavailable
                    return .success(nil)
                }
                state = .open(opened)
                return Result { () throws(SQLiteError) in try opened.queryIfReadOnly(sql) }
            case .open(let connection):
                return Result { () throws(SQLiteError) in try connection.queryIfReadOnly(sql) }
            }
        }
        do {
            return try outcome.get()
        } catch {
            throw error.at(path)
        }
    }

    private static func isPragma(_ text: String) -> Bool {
        let head = text.utf8.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }.prefix(6)
        return head.count == 6 && String(decoding: head, as: UTF8.self).uppercased() == "PRAGMA"
    }

    /// Opens the reading connection: read-write flags (a WAL reader needs the `-shm` index) but
    /// `query_only`, and it is only handed statements `sqlite3_stmt_readonly` accepts.
    private static func openReader(_ path: String, busyTimeoutMilliseconds: Int) throws(SQLiteError)
        -> SQLiteConnection
    {
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else { throw openFailure(handle, rc, path: path) }
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Int32(clamping: max(0, busyTimeoutMilliseconds)))
        let connection = SQLiteConnection(handle: handle)
        do throws(SQLiteError) {
            let mode = try connection.queryOne("PRAGMA journal_mode")?.string("journal_mode") ?? ""
            guard mode.lowercased() == "wal" else {
                throw SQLiteError(code: SQLITE_ERROR, call: "reader", message: "not a WAL file")
            }
            try connection.execute("PRAGMA query_only=1; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Versioned migrations via `PRAGMA user_version`: applies each migration with version > current, in order,
    /// each in its own transaction, bumping `user_version`. Refuses (SQLiteError) a database whose user_version is
    /// newer than the newest migration given, and versions outside `1...Int32.max` or repeated.
    /// A failing migration is rolled back and leaves `user_version` at the last successful one.
    public func migrate(_ migrations: [SQLiteMigration]) throws(SQLiteError) {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (offset, migration) in sorted.enumerated() {
            if migration.version <= 0 || migration.version > Int(Int32.max) {
                throw SQLiteError(
                    code: SQLITE_MISUSE, call: "migrate",
                    message: "migration version \(migration.version) must be in 1...\(Int32.max)")
            }
            if offset > 0 && sorted[offset - 1].version == migration.version {
                throw SQLiteError(
                    code: SQLITE_MISUSE, call: "migrate", message: "migration version \(migration.version) repeats")
            }
        }
        let newest = sorted.last?.version ?? 0
        try lockedTyped { (connection) throws(SQLiteError) in
            let current = try Self.userVersion(connection)
            if current > newest {
                throw SQLiteError(
                    code: SQLITE_ERROR, call: "migrate",
                    message: "database user_version \(current) is newer than the newest known migration \(newest)")
            }
            for migration in sorted where migration.version > current {
                do {
                    try connection.transaction { connection in
                        // Re-read inside the write lock: another connection may have migrated meanwhile.
                        guard try Self.userVersion(connection) < migration.version else { return }
                        try connection.execute(migration.sql)
                        try connection.execute("PRAGMA user_version = \(migration.version)")
                    }
                } catch let error as SQLiteError {
                    throw SQLiteError(
                        code: error.code, call: error.call,
                        message: "migration \(migration.version): \(error.message)")
                } catch {
                    // The body throws only SQLiteError; anything else is still reported, not lost.
                    throw SQLiteError(
                        code: SQLITE_ERROR, call: "migrate", message: "migration \(migration.version): \(error)")
                }
            }
        }
    }

    /// `PRAGMA user_version`.
    public var userVersion: Int {
        get throws {
            try lockedTyped { (connection) throws(SQLiteError) in try Self.userVersion(connection) }
        }
    }

    /// `PRAGMA journal_mode`, lowercased (`"wal"` for files, `"memory"` for `":memory:"`).
    public var journalMode: String {
        get throws {
            try lockedTyped { (connection) throws(SQLiteError) in
                try connection.queryOne("PRAGMA journal_mode")?.string("journal_mode")?.lowercased() ?? ""
            }
        }
    }

    /// `true` until ``close()`` is called.
    public var isOpen: Bool {
        // From inside withConnection the lock is already held by this thread; taking it again would deadlock.
        if owner.load(ordering: .acquiring) == Self.currentThread { return box.connection?.isOpen ?? false }
        return lock.withLock { _ in box.connection?.isOpen ?? false }
    }

    /// Finalizes cached statements and closes the connection. Idempotent; later calls throw ``SQLiteError``
    /// with call `"closed"`.
    public func close() {
        guard owner.load(ordering: .acquiring) != Self.currentThread else {
            // Closing from inside withConnection: the lock is already ours.
            box.connection?.close()
            box.connection = nil
            closeReader()
            return
        }
        lock.withLock { _ in
            box.connection?.close()
            box.connection = nil
        }
        closeReader()
    }

    private func closeReader() {
        reader.withLock { state in
            if case .open(let connection) = state { connection.close() }
            state = .closed
        }
    }

    /// Puts `other`'s connection in place of this database's own, which is closed: the file reopened
    /// (read-write, say, after it was opened read-only) under the object every user of it holds.
    /// Waits for the operation in progress, if any. `other` is left closed. Throws (changing
    /// nothing) when called from inside ``withConnection(_:)`` or ``transaction(_:)`` of this
    /// database, or when `other` is closed.
    public func adoptConnection(of other: SQLiteDatabase) throws(SQLiteError) {
        guard other !== self else { return }
        if owner.load(ordering: .acquiring) == Self.currentThread {
            throw SQLiteError(
                code: SQLITE_MISUSE, call: "reentrant",
                message: "a connection cannot be replaced from inside withConnection/transaction")
        }
        let moved: Bool = other.lock.withLock { _ in
            guard let connection = other.box.connection else { return false }
            lock.withLock { _ in
                box.connection?.close()
                box.connection = connection
            }
            other.box.connection = nil
            return true
        }
        guard moved else { throw SQLiteError.closed }
    }

    // MARK: - Internals

    /// An identifier for the calling thread, used only to detect reentrant use (never 0).
    private static var currentThread: UInt {
        #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
        #else
            UInt(pthread_self())
        #endif
    }

    private static func userVersion(_ connection: SQLiteConnection) throws(SQLiteError) -> Int {
        guard case .integer(let version) = try connection.queryOne("PRAGMA user_version")?[0] else { return 0 }
        return Int(version)
    }

    private static var reentrantError: SQLiteError {
        SQLiteError(
            code: SQLITE_MISUSE, call: "reentrant",
            message: "database used again from inside withConnection/transaction; use the borrowed connection")
    }

    /// Runs `body` holding the lock. Throws only for a closed database or a reentrant call.
    private func locked<R>(_ body: (SQLiteConnection) -> R) throws(SQLiteError) -> R {
        let me = Self.currentThread
        if owner.load(ordering: .acquiring) == me {
            throw SQLiteError(
                code: SQLITE_MISUSE, call: "reentrant",
                message: "database used again from inside withConnection/transaction; use the borrowed connection")
        }
        var output: R?
        lock.withLock { _ in
            guard let connection = box.connection else { return }
            owner.store(me, ordering: .releasing)
            defer { owner.store(0, ordering: .releasing) }
            output = body(connection)
        }
        guard let output else { throw SQLiteError.closed }
        return output
    }

    private func lockedTyped<T>(_ body: (SQLiteConnection) throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let result = try locked { connection in Result { () throws(SQLiteError) -> T in try body(connection) } }
        do {
            return try result.get()
        } catch {
            throw error.at(path)
        }
    }

    private static func openFailure(_ handle: OpaquePointer?, _ rc: Int32, path: String) -> SQLiteError {
        let message = handle.map { SQLiteConnection.message($0) } ?? String(cString: sqlite3_errstr(rc))
        let code = handle.map { SQLiteConnection.extendedCode($0, fallback: rc) } ?? rc
        sqlite3_close_v2(handle)
        return SQLiteError(code: code, call: "sqlite3_open_v2", message: "\(message) (path: \(path))")
    }

    /// Opens `path` read-only (`mode=ro`); when its WAL index cannot be created (read-only directory)
    /// and no `-wal` file holds unmerged pages, opens it `immutable=1` instead.
    private static func openReadOnly(_ path: String) throws(SQLiteError) -> OpaquePointer {
        let flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
        var lastError = SQLiteError(code: SQLITE_CANTOPEN, call: "sqlite3_open_v2", message: "(path: \(path))")
        for parameters in ["mode=ro", "mode=ro&immutable=1"] {
            if parameters.contains("immutable"), FileManager.default.fileExists(atPath: path + "-wal") { break }
            var handle: OpaquePointer?
            let rc = sqlite3_open_v2("file:\(uriEscaped(path))?\(parameters)", &handle, flags, nil)
            guard rc == SQLITE_OK, let handle else {
                lastError = openFailure(handle, rc, path: path)
                continue
            }
            // Opening is lazy: read the schema now so a missing WAL index shows here.
            let probe = sqlite3_exec(handle, "SELECT count(*) FROM sqlite_master", nil, nil, nil)
            if probe == SQLITE_OK { return handle }
            lastError = openFailure(handle, probe, path: path)
        }
        throw lastError
    }

    /// Percent-escapes what an SQLite URI file name cannot hold literally.
    static func uriEscaped(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), 0..<0x21, 0x7F...:
                out += String(format: "%%%02X", byte)
            default:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return out
    }

    private static func createParentDirectory(of path: String) throws(SQLiteError) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let parent = String(path[..<slash])
        guard !parent.isEmpty else { return }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: parent, isDirectory: &isDirectory), isDirectory.boolValue {
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw SQLiteError(
                code: SQLITE_CANTOPEN, call: "mkdir",
                message: "cannot create directory \(parent): \(error.localizedDescription)")
        }
    }
}

/// Holds the connection. `@unchecked Sendable` is sound because `connection` is only read or written while
/// `SQLiteDatabase.lock` is held (or, in `close()`, by the thread that currently holds it), so no two threads
/// ever touch it or the non-thread-safe `NOMUTEX` sqlite3 handle inside it at the same time.
/// Where ``SQLiteDatabase``'s reading connection is.
private enum ReaderState: @unchecked Sendable {
    /// Not opened yet: the first read opens it.
    case untried
    /// Open; used under the database's reader lock only.
    case open(SQLiteConnection)
    /// Could not be opened (not a WAL file, say): reads go to the writer.
    case unavailable
    /// The database was closed.
    case closed
}

private final class ConnectionBox: @unchecked Sendable {
    var connection: SQLiteConnection?

    init(_ connection: SQLiteConnection) {
        self.connection = connection
    }
}

/// A body queued for ``SQLiteDatabase/transaction(_:)``'s group commit, type-erased.
private protocol GroupedWork: AnyObject, Sendable {
    /// Runs the body in a transaction (a savepoint inside the group's), keeps its result, drops the
    /// body; `true` when it succeeded.
    @discardableResult func run(_ connection: SQLiteConnection) -> Bool
    /// Replaces the result with `error` (the shared transaction did not commit).
    func fail(_ error: any Error)
}

/// One caller's body and result. Only touched under the database's lock (or by its own caller before
/// queueing and after the lock released it), so `@unchecked Sendable`.
private final class GroupedTransaction<T>: GroupedWork, @unchecked Sendable {
    /// Non-escaping in the caller (`withoutActuallyEscaping`): dropped as soon as it has run.
    private var body: ((SQLiteConnection) throws -> T)?
    private(set) var result: Result<T, any Error>?

    init(_ body: @escaping (SQLiteConnection) throws -> T) { self.body = body }

    var isDone: Bool { result != nil }

    func run(_ connection: SQLiteConnection) -> Bool {
        guard let body else { return false }
        self.body = nil
        result = Result { try connection.transaction { connection in try body(connection) } }
        if case .success = result { return true }
        return false
    }

    func fail(_ error: any Error) { result = .failure(error) }

    func discard() { body = nil }
}
