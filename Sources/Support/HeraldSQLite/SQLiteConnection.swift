import CHeraldShims
import CSQLite
import Foundation

/// A connection borrowed inside ``SQLiteDatabase/withConnection(_:)`` or ``SQLiteDatabase/transaction(_:)``.
///
/// It is not `Sendable` and must not escape the closure it is handed to: the owning database serialises
/// every use of it behind its lock. After the database is closed every method throws with call `"closed"`.
public final class SQLiteConnection {
    /// The most prepared statements kept in the cache; beyond this the cache is emptied and refilled.
    static let statementCacheLimit = 64

    private var handle: OpaquePointer?
    private var statements: [StatementKey: OpaquePointer] = [:]

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        close()
    }

    /// Runs one or more `;`-separated statements that take no bindings (`sqlite3_exec`).
    public func execute(_ sql: String) throws(SQLiteError) {
        let db = try open()
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        guard rc != SQLITE_OK else { return }
        var message = errorMessage.map { String(cString: $0) } ?? Self.message(db)
        sqlite3_free(errorMessage)
        if message.isEmpty { message = String(cString: sqlite3_errstr(rc)) }
        throw SQLiteError(
            code: Self.extendedCode(db, fallback: rc), call: "sqlite3_exec", message: message,
            systemErrno: sqlite3_system_errno(db))
    }

    /// Runs exactly one statement, binding the values interpolated into it (see ``SQL``), and
    /// discards any result rows.
    ///
    /// Prepared statements are cached by SQL text (its UTF-8 bytes), so repeating the same SQL skips
    /// `sqlite3_prepare_v2`.
    public func run(_ sql: SQL) throws(SQLiteError) {
        let _: Void? = try withStatement(sql) { (statement) throws(SQLiteError) in
            while try step(statement) {}
        }
    }

    /// Runs exactly one statement, binding the values interpolated into it, and returns every result row.
    public func query(_ sql: SQL) throws(SQLiteError) -> [SQLiteRow] {
        let result: [SQLiteRow]? = try withStatement(sql) { (statement) throws(SQLiteError) in
            var rows: [SQLiteRow] = []
            let count = Int(sqlite3_column_count(statement))
            var columns: [String] = []
            var index: [String: Int] = [:]
            for position in 0..<count {
                let name = sqlite3_column_name(statement, Int32(position)).map { String(cString: $0) } ?? ""
                columns.append(name)
                if index[name] == nil { index[name] = position }
            }
            while try step(statement) {
                var values: [SQLiteValue] = []
                values.reserveCapacity(count)
                for position in 0..<count {
                    values.append(Self.column(statement, Int32(position)))
                }
                rows.append(SQLiteRow(columns: columns, values: values, indexByName: index))
            }
            return rows
        }
        return result ?? []
    }

    /// Runs one statement as ``query(_:)`` does when it only reads (`sqlite3_stmt_readonly`), and
    /// returns `nil` without running it when it would write.
    public func queryIfReadOnly(_ sql: SQL) throws(SQLiteError) -> [SQLiteRow]? {
        guard let statement = try statement(for: sql) else { return [] }
        guard sqlite3_stmt_readonly(statement) != 0 else { return nil }
        return try query(sql)
    }

    /// Runs one statement and returns its first row, or `nil` when it produced none.
    public func queryOne(_ sql: SQL) throws(SQLiteError) -> SQLiteRow? {
        try query(sql).first
    }

    /// Runs `body` as one unit of work and returns its value.
    ///
    /// Outside a transaction this is `BEGIN IMMEDIATE … COMMIT`; inside one (a `body` that calls it
    /// again, or a caller that began one) it is `SAVEPOINT … RELEASE`, so only `body`'s own work is
    /// undone when it fails. Any error thrown by `body` (or by `COMMIT`) rolls the work back and is
    /// rethrown unchanged.
    ///
    /// With ``SQLiteTransactionEnd/rollBack`` the work is always rolled back, also when `body`
    /// succeeds: a rehearsal that shows whether the writes would succeed without keeping them.
    public func transaction<T>(
        _ end: SQLiteTransactionEnd = .commit, _ body: (SQLiteConnection) throws -> T
    ) throws -> T {
        let db = try open()
        let nested = sqlite3_get_autocommit(db) == 0
        // Begin and commit are prepared statements from the cache (`sqlite3_exec` parsed them anew on
        // every transaction); a rollback is rare and two statements when nested.
        let begin: SQL = nested ? "SAVEPOINT herald_unit" : "BEGIN IMMEDIATE"
        let commit: SQL = nested ? "RELEASE herald_unit" : "COMMIT"
        let rollback = nested ? "ROLLBACK TO herald_unit; RELEASE herald_unit" : "ROLLBACK"
        try run(begin)
        let value: T
        do {
            value = try body(self)
        } catch {
            // The transaction may already be gone (SQLite rolls back on some errors); undo what is left.
            try? execute(rollback)
            throw error
        }
        if end == .rollBack {
            try execute(rollback)
            return value
        }
        do {
            try run(commit)
        } catch {
            // COMMIT may fail (e.g. SQLITE_BUSY) leaving the transaction open; roll back either way.
            try? execute(rollback)
            throw error
        }
        return value
    }

    /// `true` while a transaction is open on this connection (`sqlite3_get_autocommit` is 0).
    public var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// The rowid of the most recent successful `INSERT` on this connection (`sqlite3_last_insert_rowid`).
    public var lastInsertRowID: Int64 {
        guard let handle else { return 0 }
        return sqlite3_last_insert_rowid(handle)
    }

    /// Rows changed by the most recent `INSERT`, `UPDATE` or `DELETE` (`sqlite3_changes`).
    public var changes: Int {
        guard let handle else { return 0 }
        return Int(sqlite3_changes(handle))
    }

    /// `true` when the main database of this connection cannot be written (`sqlite3_db_readonly`).
    public var isReadOnly: Bool {
        get throws(SQLiteError) { sqlite3_db_readonly(try open(), "main") == 1 }
    }

    /// How many prepared statements are currently cached (for tests and diagnostics).
    public var cachedStatementCount: Int { statements.count }

    // MARK: - Internals

    var isOpen: Bool { handle != nil }

    /// Finalizes every cached statement and closes the handle. Idempotent.
    func close() {
        for statement in statements.values {
            sqlite3_finalize(statement)
        }
        statements.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
        }
        handle = nil
    }

    private func open() throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError.closed }
        return handle
    }

    static func message(_ db: OpaquePointer) -> String {
        sqlite3_errmsg(db).map { String(cString: $0) } ?? "unknown error"
    }

    static func extendedCode(_ db: OpaquePointer, fallback: Int32) -> Int32 {
        let code = sqlite3_extended_errcode(db)
        return code == SQLITE_OK ? fallback : code
    }

    private func failure(_ rc: Int32, _ call: String, sql: String? = nil) throws(SQLiteError) -> Never {
        let db = try open()
        var message = Self.message(db)
        if let sql {
            message += " — in SQL: \(String(sql.prefix(200)))"
        }
        throw SQLiteError(
            code: Self.extendedCode(db, fallback: rc), call: call, message: message,
            systemErrno: sqlite3_system_errno(db))
    }

    /// Prepares (or reuses) the statement, binds, runs `body`, and always resets the statement afterwards.
    private func withStatement<T>(
        _ sql: SQL, _ body: (OpaquePointer) throws(SQLiteError) -> T
    ) throws(SQLiteError) -> T? {
        let bindings = sql.bindings
        guard let statement = try statement(for: sql) else {
            // Empty SQL (only whitespace or comments) prepares to no statement at all.
            guard bindings.isEmpty else {
                throw SQLiteError(
                    code: SQLITE_RANGE, call: "sqlite3_bind",
                    message: "\(bindings.count) bindings given for SQL with no statement")
            }
            return nil
        }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        try bind(bindings, to: statement, sql: sql)
        return try body(statement)
    }

    private func statement(for query: SQL) throws(SQLiteError) -> OpaquePointer? {
        let key = StatementKey(utf8: query.utf8)
        if let cached = statements[key] { return cached }
        let sql = query.text
        let db = try open()
        var statement: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        let rc = sql.withCString { sqlite3_prepare_v2(db, $0, -1, &statement, &tail) }
        guard rc == SQLITE_OK else {
            sqlite3_finalize(statement)
            try failure(rc, "sqlite3_prepare_v2", sql: sql)
        }
        guard let statement else { return nil }
        // Refuse a second statement instead of silently ignoring it: prepare the tail and see if it is empty.
        let rest = tail.map { String(cString: $0) } ?? ""
        if !rest.isEmpty {
            var extra: OpaquePointer?
            let tailRC = sqlite3_prepare_v2(db, rest, -1, &extra, nil)
            sqlite3_finalize(extra)
            if tailRC != SQLITE_OK || extra != nil {
                sqlite3_finalize(statement)
                throw SQLiteError(
                    code: SQLITE_MISUSE, call: "sqlite3_prepare_v2",
                    message: "run/query take exactly one statement; use execute for several — in SQL: "
                        + String(sql.prefix(200)))
            }
        }
        if statements.count >= Self.statementCacheLimit {
            for cached in statements.values {
                sqlite3_finalize(cached)
            }
            statements.removeAll()
        }
        statements[key] = statement
        return statement
    }

    private func bind(_ bindings: [SQLiteValue], to statement: OpaquePointer, sql: SQL) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard expected == bindings.count else {
            throw SQLiteError(
                code: SQLITE_RANGE, call: "sqlite3_bind",
                message: "statement takes \(expected) bindings but \(bindings.count) were given — in SQL: "
                    + String(sql.text.prefix(200)))
        }
        for (offset, value) in bindings.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            let call: String
            switch value {
            case .null:
                rc = sqlite3_bind_null(statement, index)
                call = "sqlite3_bind_null"
            case .integer(let number):
                rc = sqlite3_bind_int64(statement, index, number)
                call = "sqlite3_bind_int64"
            case .real(let number):
                rc = sqlite3_bind_double(statement, index, number)
                call = "sqlite3_bind_double"
            case .bool(let flag):
                // SQLite has no booleans: 1 or 0, as SQLiteDialect binds a Bool.
                rc = sqlite3_bind_int64(statement, index, flag ? 1 : 0)
                call = "sqlite3_bind_int64"
            case .text(let text):
                let length = text.utf8.count
                guard length <= Int(Int32.max) else { throw Self.tooBig("sqlite3_bind_text") }
                rc = text.withCString { herald_sqlite3_bind_text_transient(statement, index, $0, Int32(length)) }
                call = "sqlite3_bind_text"
            case .bytes(let bytes):
                guard bytes.count <= Int(Int32.max) else { throw Self.tooBig("sqlite3_bind_blob") }
                if bytes.isEmpty {
                    // A nil data pointer would bind NULL; an empty blob is a zero-length zeroblob.
                    rc = sqlite3_bind_zeroblob(statement, index, 0)
                    call = "sqlite3_bind_zeroblob"
                } else {
                    rc = bytes.withUnsafeBytes {
                        herald_sqlite3_bind_blob_transient(statement, index, $0.baseAddress, Int32(bytes.count))
                    }
                    call = "sqlite3_bind_blob"
                }
            }
            if rc != SQLITE_OK { try failure(rc, call) }
        }
    }

    private static func tooBig(_ call: String) -> SQLiteError {
        SQLiteError(code: SQLITE_TOOBIG, call: call, message: "value larger than 2 GiB")
    }

    /// Steps once: `true` when a row is ready, `false` when done.
    private func step(_ statement: OpaquePointer) throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(statement)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: try failure(rc, "sqlite3_step")
        }
    }

    private static func column(_ statement: OpaquePointer, _ index: Int32) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let data = sqlite3_column_blob(statement, index) else { return .bytes([]) }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .bytes(Array(UnsafeRawBufferPointer(start: data, count: count)))
        default:
            return .null
        }
    }
}

/// The prepared-statement cache's key: the statement's UTF-8 bytes, hashed and compared in bulk.
private struct StatementKey: Hashable {
    let utf8: [UInt8]

    func hash(into hasher: inout Hasher) {
        utf8.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        guard !lhs.utf8.isEmpty else { return true }
        return lhs.utf8.withUnsafeBytes { left in
            rhs.utf8.withUnsafeBytes { right in
                guard let l = left.baseAddress, let r = right.baseAddress else { return false }
                return memcmp(l, r, left.count) == 0
            }
        }
    }
}

/// How ``SQLiteConnection/transaction(_:_:)`` ends a unit of work whose body succeeded.
public enum SQLiteTransactionEnd: Sendable, Equatable {
    /// Keep the work (`COMMIT`, or `RELEASE` of the savepoint).
    case commit
    /// Undo the work (`ROLLBACK`, or `ROLLBACK TO` the savepoint): a rehearsal.
    case rollBack
}
