import CLibPQ
import Foundation
import HeraldSync

/// A dedicated connection that `LISTEN`s on one channel and waits for its notifications.
///
/// ``wait(timeout:)`` blocks the calling thread in `poll(2)` on the connection's socket (no busy
/// loop) until a notification arrives or the timeout passes. When the connection breaks, the next
/// wait reconnects and listens again (notifications sent meanwhile are lost, which is why callers
/// also poll).
public final class PostgresListener: Sendable {
    /// The channel listened on.
    public let channel: String
    private let database: PostgresDatabase
    private let state = Locked<ConnectionSlot>(ConnectionSlot())

    /// Listens on `channel` (an identifier: letters, digits and `_` only) of `database`.
    public init(database: PostgresDatabase, channel: String) throws(PostgresError) {
        guard !channel.isEmpty, channel.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || isalnum(Int32($0)) != 0 }) else {
            throw PostgresError(sqlState: nil, call: "LISTEN", message: "invalid channel name")
        }
        self.channel = channel
        self.database = database
    }

    /// Waits until a notification on ``channel`` arrives (returns its payloads) or `timeout`
    /// passes (returns `[]`). Throws when the server cannot be reached; call again to retry.
    public func wait(timeout: Duration) throws(PostgresError) -> [String] {
        // A wait in progress keeps the connection open: close() from another thread only marks the
        // listener closed, and the last wait closes the connection when it returns.
        guard enter() else { return [] }
        defer { leave() }
        let connection = try connected()
        do {
            var payloads = try connection.drainNotifications().filter { $0.channel == channel }.map(\.payload)
            if !payloads.isEmpty { return payloads }
            let ms = Int32(
                clamping: max(
                    0, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
            var pfd = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            let rc = poll(&pfd, 1, ms)
            if rc > 0 {
                payloads = try connection.drainNotifications().filter { $0.channel == channel }.map(\.payload)
            }
            if !connection.isHealthy { drop() }
            return payloads
        } catch {
            drop()
            throw error
        }
    }

    /// Closes the listening connection (at once, or when the wait in progress returns); later waits
    /// return `[]` at once.
    public func close() {
        let c = state.withLock { s -> PostgresConnection? in
            s.closed = true
            guard s.waiters == 0 else { return nil }
            let c = s.connection
            s.connection = nil
            return c
        }
        c?.close()
    }

    /// Counts a wait in; false once the listener is closed.
    private func enter() -> Bool {
        state.withLock { s in
            guard !s.closed else { return false }
            s.waiters += 1
            return true
        }
    }

    /// Counts a wait out; the last one out after close() closes the connection.
    private func leave() {
        let c = state.withLock { s -> PostgresConnection? in
            s.waiters -= 1
            guard s.closed, s.waiters == 0 else { return nil }
            let c = s.connection
            s.connection = nil
            return c
        }
        c?.close()
    }

    private func connected() throws(PostgresError) -> PostgresConnection {
        if let c = state.withLock({ $0.connection }), c.isHealthy { return c }
        drop()
        let c = try database.dedicatedConnection()
        try c.execute("LISTEN \"\(channel)\"")
        state.withLock { $0.connection = c }
        return c
    }

    /// Closes the connection; only a wait calls it (close() defers to the waits in progress).
    private func drop() {
        let c = state.withLock { s in
            let c = s.connection
            s.connection = nil
            return c
        }
        c?.close()
    }
}

/// The listener's connection, if open.
private struct ConnectionSlot: @unchecked Sendable {
    var connection: PostgresConnection?
    /// Waits in progress (each uses `connection` outside the lock).
    var waiters = 0
    /// close() was called: no new wait starts.
    var closed = false
}
