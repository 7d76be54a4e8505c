import CLibPQ
import Dispatch
import Foundation
import HeraldSync

/// A PostgreSQL database behind a small pool of libpq connections, safe to share between tasks.
///
/// Each call borrows one connection for its duration (at most ``maximumConnections`` at once;
/// more callers wait). A connection that broke (the server restarted or went away) is dropped and
/// the next call opens a new one, so a process resumes by itself once the server is back. An idle
/// connection is checked before it is lent (a server that shut down has told it so), so the first
/// statement after a restart does not fail on a stale connection.
///
/// The URL is kept only to connect: ``redactedURL`` (no password) is what errors and logs show.
public final class PostgresDatabase: Sendable {
    /// The URL without its password, for messages.
    public let redactedURL: String
    /// Connections open at most at once.
    public let maximumConnections: Int
    private let url: String
    private let connectTimeoutSeconds: Int
    /// Whether connections prepare their statements (see ``init(url:maximumConnections:connectTimeoutSeconds:preparedStatements:)``).
    public let preparedStatements: Bool
    private let idle = Locked<[ConnectionBox]>([])
    private let closed = Locked<Bool>(false)
    private let slots: DispatchSemaphore

    /// Connects once (so a wrong URL, password or unreachable server fails here) and keeps that
    /// connection for the pool.
    ///
    /// With `preparedStatements` (the default) each connection prepares every distinct statement
    /// text the first time it runs it, so later runs skip the server's parsing and planning. Turn it
    /// off behind a pooler that does not keep prepared statements (PgBouncer before 1.21 in
    /// transaction mode); a statement the server lost is prepared again by itself either way.
    public init(
        url: String, maximumConnections: Int = 4, connectTimeoutSeconds: Int = 5, preparedStatements: Bool = true
    ) throws(PostgresError) {
        self.url = url
        self.preparedStatements = preparedStatements
        self.redactedURL = PostgresURL.redacted(url)
        self.maximumConnections = max(1, maximumConnections)
        self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        self.slots = DispatchSemaphore(value: max(1, maximumConnections))
        let first = try PostgresConnection(
            url: url, connectTimeoutSeconds: connectTimeoutSeconds, prepareStatements: preparedStatements)
        idle.withLock { $0.append(ConnectionBox(first)) }
    }

    /// Opens a separate connection that is not part of the pool (for `LISTEN`).
    func dedicatedConnection() throws(PostgresError) -> PostgresConnection {
        try PostgresConnection(url: url, connectTimeoutSeconds: connectTimeoutSeconds, prepareStatements: false)
    }

    /// Runs `body` with a connection of the pool.
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        if closed.withLock({ $0 }) { throw PostgresError.closed }
        slots.wait()
        defer { slots.signal() }
        let connection = try borrow()
        defer { giveBack(connection) }
        return try body(connection)
    }

    /// Runs `body` in one transaction (`BEGIN … COMMIT`; rolled back when it throws).
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try withConnection { c in try c.transaction(body) }
    }

    /// Runs one statement outside a transaction; returns the rows it changed.
    @discardableResult
    public func run(_ sql: PostgresSQL) throws -> Int { try withConnection { c in try c.run(sql) } }

    /// Runs one query outside a transaction.
    public func query(_ sql: PostgresSQL) throws -> [PostgresRow] { try withConnection { c in try c.query(sql) } }

    /// Runs one query outside a transaction and returns its first row, or `nil` when it produced none.
    public func queryOne(_ sql: PostgresSQL) throws -> PostgresRow? { try query(sql).first }

    /// Runs `statements` as one pipeline, in one implicit transaction and one round trip (see
    /// ``PostgresConnection/pipeline(_:)``).
    public func pipeline(_ statements: [PostgresSQL]) throws -> [[PostgresRow]] {
        try withConnection { c in try c.pipeline(statements) }
    }

    /// Runs a parameterless script (several statements) outside a transaction.
    public func execute(_ script: String) throws { try withConnection { c in try c.execute(script) } }

    /// Closes every idle connection; later calls fail with `closed`.
    public func close() {
        closed.withLock { $0 = true }
        let boxes = idle.withLock { all in
            let out = all
            all.removeAll()
            return out
        }
        for b in boxes { b.connection.close() }
    }

    private func borrow() throws(PostgresError) -> PostgresConnection {
        while let box = idle.withLock({ $0.popLast() }) {
            if box.connection.checkIdle() { return box.connection }
            box.connection.close()
        }
        return try PostgresConnection(
            url: url, connectTimeoutSeconds: connectTimeoutSeconds, prepareStatements: preparedStatements)
    }

    private func giveBack(_ connection: PostgresConnection) {
        guard connection.isHealthy, !connection.isInTransaction, !closed.withLock({ $0 }) else {
            connection.close()
            return
        }
        idle.withLock { $0.append(ConnectionBox(connection)) }
    }
}

/// A connection in the idle list; only one borrower touches it at a time.
private struct ConnectionBox: @unchecked Sendable {
    let connection: PostgresConnection
    init(_ connection: PostgresConnection) { self.connection = connection }
}
