import CMicroHTTPD
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Connection limits and deadlines: the table of open connections (per client address), the reserve
/// connections past a limit, and the thread that cuts requests past their head or request deadline.
extension MicroHTTPServer {
    /// Why a connection is a reserve connection (only health checks are served on it).
    enum Reserve: Sendable, Equatable {
        /// More than ``ServerOptions/maxConnections`` were open when it came.
        case total
        /// Its client held ``ServerOptions/maxConnectionsPerClient`` connections already.
        case client
    }

    /// One open connection.
    final class ConnectionEntry: @unchecked Sendable {
        let fd: Int32
        /// The client's numeric address.
        let client: String
        /// Set when it was accepted past a limit.
        let reserve: Reserve?
        /// When the request being received began (connection start or end of the previous
        /// response); nil while a request is handled or answered.
        var since: ContinuousClock.Instant?
        /// Whether the current request's head has arrived.
        var headDone = false
        /// Whether a request was answered on it before (the head deadline then adds the idle time).
        var keptAlive = false
        init(fd: Int32, client: String, reserve: Reserve?, since: ContinuousClock.Instant?) {
            self.fd = fd
            self.client = client
            self.reserve = reserve
            self.since = since
        }
    }

    /// The open connections and the count per client address.
    struct ConnectionTable {
        var entries: [Int: ConnectionEntry] = [:]
        var perClient: [String: Int] = [:]
    }

    /// How many connections are open (reserve ones included).
    public var openConnections: Int { connections.withLock { $0.entries.count } }

    func startDeadlineTimer() {
        // Its own thread, not a task: a busy concurrency pool must not delay the cut.
        let interval = max(options.deadlineCheckInterval, .milliseconds(10))
        let micros = UInt32(
            clamping: interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        let thread = Thread { [weak self] in
            while true {
                usleep(micros)
                guard let self, !self.timerStopped.load(ordering: .acquiring) else { return }
                self.cutLateConnections()
            }
        }
        thread.name = "herald.mhd.deadline"
        thread.start()
    }

    /// Shuts down the socket of every connection whose request is past the deadline (its head past
    /// the head deadline, or the whole request past the request deadline); libmicrohttpd then sees
    /// the socket fail and closes the connection itself.
    func cutLateConnections() {
        let now = ContinuousClock.now
        let requestLimit = options.requestDeadline
        let headLimit = options.headerDeadline
        let reserveHeadLimit = min(options.reserveHeaderDeadline, options.headerDeadline)
        let idle = Duration.seconds(max(1, options.idleTimeoutSeconds))
        connections.withLock { table in
            // While the server is full, every connection waiting for a head (new or kept alive) has
            // the reserve's short deadline: a flood of slow heads is then cut every few seconds, so
            // the listen backlog drains and a health check that sends its head at once gets in.
            let full = table.entries.count >= max(1, options.maxConnections)
            for (_, entry) in table.entries {
                guard let since = entry.since else { continue }
                var limit = requestLimit
                if !entry.headDone {
                    let head =
                        full || entry.reserve != nil
                        ? reserveHeadLimit : headLimit + (entry.keptAlive ? idle : .zero)
                    limit = min(limit, head)
                }
                if now - since > limit {
                    entry.since = nil
                    shutdown(entry.fd, Int32(SHUT_RDWR))
                }
            }
        }
    }

    func setReceiving(_ connection: OpaquePointer?, _ receiving: Bool) {
        guard let connection else { return }
        let key = Int(bitPattern: connection)
        let since: ContinuousClock.Instant? = receiving ? ContinuousClock.now : nil
        connections.withLock { table in table.entries[key]?.since = since }
    }

    /// The head of the current request has arrived; returns why the connection is a reserve one.
    func headReceived(_ connection: OpaquePointer) -> Reserve? {
        let key = Int(bitPattern: connection)
        return connections.withLock { table in
            table.entries[key]?.headDone = true
            return table.entries[key]?.reserve
        }
    }

    /// Records a new connection, a reserve one past a limit; cuts it at once when its client holds
    /// its limit and its reserve already.
    func connectionStarted(_ connection: OpaquePointer) {
        let key = Int(bitPattern: connection)
        let fd = herald_mhd_connection_fd(connection)
        let client = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer -> String in
            guard let base = buffer.baseAddress, herald_mhd_client_address(connection, base, buffer.count) != 0 else {
                return ""
            }
            return String(cString: base)
        }
        let perClient = max(1, options.maxConnectionsPerClient)
        let cut = connections.withLock { table -> Bool in
            let held = table.perClient[client, default: 0] + 1
            table.perClient[client] = held
            var reserve: Reserve?
            if held > perClient {
                reserve = .client
            } else if table.entries.count + 1 > max(1, options.maxConnections) {
                reserve = .total
            }
            table.entries[key] = ConnectionEntry(fd: fd, client: client, reserve: reserve, since: ContinuousClock.now)
            return held > perClient + max(0, options.reservePerClient)
        }
        if cut, fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// The client address recorded when `connection` started ("" when unknown).
    func clientAddress(of connection: OpaquePointer) -> String {
        connections.withLock { $0.entries[Int(bitPattern: connection)]?.client ?? "" }
    }

    func connectionClosed(_ connection: OpaquePointer) {
        let key = Int(bitPattern: connection)
        connections.withLock { table in
            guard let entry = table.entries.removeValue(forKey: key) else { return }
            let left = table.perClient[entry.client, default: 1] - 1
            table.perClient[entry.client] = left > 0 ? left : nil
        }
    }
}
