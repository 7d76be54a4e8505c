import CLibPQ
import Foundation

/// One libpq connection, borrowed inside ``PostgresDatabase/withConnection(_:)`` or
/// ``PostgresDatabase/transaction(_:)``.
///
/// It is not `Sendable` and must not escape the closure it is handed to: the owning database
/// hands each connection to one caller at a time.
public final class PostgresConnection {
    private var handle: OpaquePointer?
    /// Open `BEGIN`/`SAVEPOINT` levels.
    private var depth = 0
    /// Statement texts prepared on this connection, with their server-side names; `nil` when
    /// statements are not prepared (``PostgresDatabase`` `preparedStatements: false`).
    private var prepared: [String: String]?
    /// The number in the next statement name: names are never reused on a connection.
    private var nextStatement = 0
    /// Statements a connection prepares at most; any beyond run unprepared.
    static let preparedLimit = 200

    /// Connects with `url` (a `postgresql://` URL or a `key=value` string, parsed by libpq, so the
    /// password may come from the URL, `PGPASSWORD` or `~/.pgpass`, and `sslmode` and every other
    /// libpq parameter pass through). `connectTimeoutSeconds` applies unless the URL sets its own.
    ///
    /// With `prepareStatements`, each distinct statement text is prepared once on the connection
    /// (up to ``preparedLimit``) and later runs skip the server's parse, analysis and (once its
    /// generic plan is chosen) planning.
    init(url: String, connectTimeoutSeconds: Int, prepareStatements: Bool = true) throws(PostgresError) {
        let keys = ["connect_timeout", "application_name", "dbname"]
        let values = [String(connectTimeoutSeconds), "herald", url]
        let conn = Self.withCStrings(keys) { k in
            Self.withCStrings(values) { v in PQconnectdbParams(k, v, 1) }
        }
        guard let conn else {
            throw PostgresError(
                sqlState: nil, call: "connect", message: "libpq could not allocate a connection",
                isConnectionFailure: true)
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = Self.errorText(conn)
            PQfinish(conn)
            throw PostgresError(
                sqlState: nil, call: "connect", message: PostgresURL.scrub(message, url: url), isConnectionFailure: true
            )
        }
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        handle = conn
        prepared = prepareStatements ? [:] : nil
    }

    deinit { close() }

    /// Closes the connection. Idempotent.
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
    }

    /// `false` once the connection is closed or libpq saw it break.
    var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Reads whatever the server sent while the connection was idle (a shutdown notice, EOF) without
    /// blocking, and says whether the connection is still usable.
    func checkIdle() -> Bool {
        guard let handle else { return false }
        if PQconsumeInput(handle) == 0 { return false }
        return PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// The server's socket (for waiting on notifications).
    var socket: Int32 {
        guard let handle else { return -1 }
        return PQsocket(handle)
    }

    /// Runs one statement and returns the number of rows it changed (or returned).
    @discardableResult
    public func run(_ sql: PostgresSQL) throws(PostgresError) -> Int {
        let result = try exec(sql)
        defer { PQclear(result) }
        let tuples = PQcmdTuples(result).map { String(cString: $0) } ?? ""
        return Int(tuples) ?? Int(PQntuples(result))
    }

    /// Runs one statement and returns its rows.
    public func query(_ sql: PostgresSQL) throws(PostgresError) -> [PostgresRow] {
        let result = try exec(sql)
        defer { PQclear(result) }
        return Self.rows(result)
    }

    /// The rows of a successful result.
    private static func rows(_ result: OpaquePointer) -> [PostgresRow] {
        let columnCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        var columns: [String] = []
        var types: [UInt32] = []
        var index: [String: Int] = [:]
        for c in 0..<columnCount {
            let name = PQfname(result, Int32(c)).map { String(cString: $0) } ?? ""
            columns.append(name)
            types.append(PQftype(result, Int32(c)))
            if index[name] == nil { index[name] = c }
        }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for r in 0..<rowCount {
            var values: [PostgresValue] = []
            values.reserveCapacity(columnCount)
            for c in 0..<columnCount {
                values.append(value(result, Int32(r), Int32(c), type: types[c]))
            }
            rows.append(PostgresRow(columns: columns, values: values, indexByName: index))
        }
        return rows
    }

    /// Runs one statement and returns its first row, or `nil` when it produced none.
    public func queryOne(_ sql: PostgresSQL) throws(PostgresError) -> PostgresRow? {
        try query(sql).first
    }

    /// Runs `statements` as one pipeline (libpq pipeline mode): all of them are sent at once and
    /// their results read after one `Sync`, so the whole list costs one round trip. Outside a
    /// transaction the statements form one implicit transaction: when one fails, the ones before it
    /// are rolled back, the rest are skipped, and its error is thrown. Returns each statement's rows
    /// (empty for statements that return none), in order.
    public func pipeline(_ statements: [PostgresSQL]) throws(PostgresError) -> [[PostgresRow]] {
        do {
            return try pipelineOnce(statements)
        } catch let error where depth == 0 && Self.invalidatesPrepared(error) {
            // The server lost or outdated a prepared statement (a `DEALLOCATE`, a pooler, a schema
            // change): the pipeline rolled back as a whole, so it is safe to run it again, prepared anew.
            prepared = prepared.map { _ in [:] }
            return try pipelineOnce(statements)
        }
    }

    /// What one pipeline entry's results belong to.
    private enum Sent {
        /// The `Parse` of statement `index`, prepared as `name`.
        case prepare(index: Int, name: String)
        /// The execution of statement `index`.
        case execute(index: Int)
    }

    private func pipelineOnce(_ statements: [PostgresSQL]) throws(PostgresError) -> [[PostgresRow]] {
        guard !statements.isEmpty else { return [] }
        let conn = try open()
        for statement in statements {
            try Self.refuseNUL(statement.bindings.map(\.parameterText), call: "PQsendQueryParams")
        }
        guard PQenterPipelineMode(conn) == 1 else { throw failure(conn, nil, "PQenterPipelineMode", sql: nil) }
        // A pipeline left half read cannot be left: the connection is closed (the pool drops it).
        defer { if PQexitPipelineMode(conn) != 1 { close() } }
        var sent: [Sent] = []
        var preparing: [String: String] = [:]
        for (index, statement) in statements.enumerated() {
            let params = statement.bindings.map(\.parameterText)
            let count = Int32(params.count)
            let name = statementName(statement.text, preparing: preparing)
            if let name, name.fresh {
                guard PQsendPrepare(conn, name.name, statement.text, count, nil) == 1 else {
                    throw failure(conn, nil, "PQsendPrepare", sql: statement.text)
                }
                sent.append(.prepare(index: index, name: name.name))
                preparing[statement.text] = name.name
            }
            let ok = Self.withOptionalCStrings(params) { values in
                if let name { return PQsendQueryPrepared(conn, name.name, count, values, nil, nil, 0) }
                return PQsendQueryParams(conn, statement.text, count, nil, values, nil, nil, 0)
            }
            if ok != 1 { throw failure(conn, nil, "PQsendQueryParams", sql: statement.text) }
            sent.append(.execute(index: index))
        }
        if PQpipelineSync(conn) != 1 { throw failure(conn, nil, "PQpipelineSync", sql: nil) }
        // Each entry's results end with a NULL; the Sync's own result ends the pipeline.
        var rows = [[PostgresRow]](repeating: [], count: statements.count)
        var position = 0
        var firstError: PostgresError?
        var nulls = 0
        while true {
            guard let result = PQgetResult(conn) else {
                position += 1
                nulls += 1
                // A broken connection yields no Sync: stop rather than wait for it forever.
                if nulls > sent.count + 1 || PQstatus(conn) != CONNECTION_OK {
                    throw firstError ?? failure(conn, nil, "PQgetResult", sql: nil)
                }
                continue
            }
            nulls = 0
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            let entry = position < sent.count ? sent[position] : nil
            let index: Int? =
                switch entry {
                case .prepare(let i, _), .execute(let i): i
                case nil: nil
                }
            if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                switch entry {
                case .prepare(let i, let name):
                    // Kept once the server has it: a `Parse` skipped by an earlier error never ran.
                    prepared?[statements[i].text] = name
                case .execute(let i):
                    rows[i] = Self.rows(result)
                case nil: break
                }
            } else if status != PGRES_PIPELINE_ABORTED, firstError == nil {
                firstError = failure(
                    conn, result, "PQsendQueryParams", sql: index.map { statements[$0].text })
            }
            PQclear(result)
        }
        if let firstError { throw firstError }
        return rows
    }

    /// Runs a script of one or more statements without parameters (migrations, `LISTEN`).
    public func execute(_ script: String) throws(PostgresError) {
        let conn = try open()
        guard let result = PQexec(conn, script) else { throw failure(conn, nil, "PQexec", sql: script) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw failure(conn, result, "PQexec", sql: script)
        }
    }

    /// Runs `body` as one unit of work and returns its value: `BEGIN … COMMIT` outside a
    /// transaction, `SAVEPOINT … RELEASE` inside one. Any error thrown by `body` (or by `COMMIT`)
    /// rolls the work back and is rethrown unchanged.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let nested = depth > 0
        try execute(nested ? "SAVEPOINT herald_unit" : "BEGIN")
        depth += 1
        let value: T
        do {
            value = try body(self)
        } catch {
            depth -= 1
            try? execute(nested ? "ROLLBACK TO SAVEPOINT herald_unit; RELEASE SAVEPOINT herald_unit" : "ROLLBACK")
            throw error
        }
        depth -= 1
        do {
            try execute(nested ? "RELEASE SAVEPOINT herald_unit" : "COMMIT")
        } catch {
            try? execute(nested ? "ROLLBACK TO SAVEPOINT herald_unit; RELEASE SAVEPOINT herald_unit" : "ROLLBACK")
            throw error
        }
        return value
    }

    /// `true` while a transaction is open on this connection.
    public var isInTransaction: Bool { depth > 0 }

    /// Notifications received so far on this connection (channel, payload), after reading the socket.
    func drainNotifications() throws(PostgresError) -> [(channel: String, payload: String)] {
        let conn = try open()
        if PQconsumeInput(conn) == 0 { throw failure(conn, nil, "PQconsumeInput", sql: nil) }
        var out: [(String, String)] = []
        while let n = PQnotifies(conn) {
            let channel = n.pointee.relname.map { String(cString: $0) } ?? ""
            let payload = n.pointee.extra.map { String(cString: $0) } ?? ""
            out.append((channel, payload))
            PQfreemem(n)
        }
        return out
    }

    // MARK: - Internals

    private func open() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError.closed }
        return handle
    }

    private func exec(_ sql: PostgresSQL) throws(PostgresError) -> OpaquePointer {
        do {
            return try execOnce(sql)
        } catch let error where depth == 0 && Self.invalidatesPrepared(error) {
            // Outside a transaction the failed statement changed nothing: prepare it anew and rerun.
            prepared = prepared.map { _ in [:] }
            return try execOnce(sql)
        }
    }

    private func execOnce(_ sql: PostgresSQL) throws(PostgresError) -> OpaquePointer {
        let conn = try open()
        let text = sql.text
        let params = sql.bindings.map(\.parameterText)
        try Self.refuseNUL(params, call: "PQexecParams")
        let count = Int32(params.count)
        let name = statementName(text)
        if let name, name.fresh {
            guard let result = PQprepare(conn, name.name, text, count, nil) else {
                throw failure(conn, nil, "PQprepare", sql: text)
            }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else {
                throw failure(conn, result, "PQprepare", sql: text)
            }
            prepared?[text] = name.name
        }
        let result: OpaquePointer? = Self.withOptionalCStrings(params) { values in
            if let name { return PQexecPrepared(conn, name.name, count, values, nil, nil, 0) }
            return PQexecParams(conn, text, count, nil, values, nil, nil, 0)
        }
        guard let result else { throw failure(conn, nil, "PQexecParams", sql: text) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            defer { PQclear(result) }
            throw failure(conn, result, "PQexecParams", sql: text)
        }
        return result
    }

    /// The server-side name to run `text` under: the one it was prepared as (on this connection, or
    /// earlier in the same pipeline: `preparing`), or a new one to prepare it as first (`fresh`).
    /// Nil runs it unprepared: statements are not prepared, or ``preparedLimit`` is reached.
    private func statementName(_ text: String, preparing: [String: String] = [:]) -> (name: String, fresh: Bool)? {
        guard let known = prepared else { return nil }
        if let name = known[text] ?? preparing[text] { return (name, false) }
        guard known.count + preparing.count < Self.preparedLimit else { return nil }
        nextStatement += 1
        return ("herald_\(nextStatement)", true)
    }

    /// Throws for a parameter holding a NUL character, which PostgreSQL cannot store.
    private static func refuseNUL(_ params: [String?], call: String) throws(PostgresError) {
        for p in params where p?.utf8.contains(0) == true {
            throw PostgresError(
                sqlState: "22021", call: call,
                message: "a text value contains a NUL character, which PostgreSQL cannot store")
        }
    }

    /// Whether `error` says a prepared statement of this connection is gone (`26000`: a
    /// `DEALLOCATE`, `DISCARD ALL` or a pooler's new server connection) or outdated (`0A000`, "cached
    /// plan must not change result type": a schema change under a `SELECT *`).
    static func invalidatesPrepared(_ error: PostgresError) -> Bool {
        error.sqlState == "26000" || (error.sqlState == "0A000" && error.message.contains("cached plan"))
    }

    private func failure(_ conn: OpaquePointer, _ result: OpaquePointer?, _ call: String, sql: String?)
        -> PostgresError
    {
        var state: String?
        var message: String
        if let result, let s = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) {
            state = String(cString: s)
            message = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? ""
        } else {
            message = Self.errorText(conn)
        }
        if let sql { message += " — in SQL: \(String(sql.prefix(200)))" }
        let broken = PQstatus(conn) != CONNECTION_OK
        let connectionClass =
            state.map { $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P02" || $0 == "57P03" } ?? false
        return PostgresError(
            sqlState: state, call: call, message: message, isConnectionFailure: broken || connectionClass)
    }

    static func errorText(_ conn: OpaquePointer) -> String {
        let text = PQerrorMessage(conn).map { String(cString: $0) } ?? "unknown error"
        return text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
    }

    private static func value(_ result: OpaquePointer, _ row: Int32, _ column: Int32, type: UInt32) -> PostgresValue {
        if PQgetisnull(result, row, column) == 1 { return .null }
        guard let raw = PQgetvalue(result, row, column) else { return .null }
        let length = Int(PQgetlength(result, row, column))
        let bytes = UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self)
        let buffer = UnsafeBufferPointer(start: bytes, count: length)
        switch type {
        case 20, 21, 23, 26:  // int8, int2, int4, oid
            return Int64(String(decoding: buffer, as: UTF8.self)).map(PostgresValue.integer)
                ?? .text(String(decoding: buffer, as: UTF8.self))
        case 700, 701, 1700:  // float4, float8, numeric
            return Double(String(decoding: buffer, as: UTF8.self)).map(PostgresValue.real)
                ?? .text(String(decoding: buffer, as: UTF8.self))
        case 16:  // bool
            return .bool(length > 0 && buffer[0] == UInt8(ascii: "t"))
        case 17:  // bytea
            return PostgresValue.unhex(buffer).map(PostgresValue.bytes)
                ?? .text(String(decoding: buffer, as: UTF8.self))
        default:
            return .text(String(decoding: buffer, as: UTF8.self))
        }
    }

    /// A NULL-terminated array of C strings (libpq's keyword/value arrays), valid inside `body`.
    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R
    {
        let copies = strings.map { strdup($0) }
        defer {
            for copy in copies { free(copy) }
        }
        var pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        pointers.append(nil)
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    private static func withOptionalCStrings<R>(
        _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R
    ) -> R {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer {
            for copy in copies { free(copy) }
        }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
