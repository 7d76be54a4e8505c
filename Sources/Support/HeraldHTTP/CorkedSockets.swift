import CHeraldShims

/// The connection sockets one event loop keeps corked (`TCP_CORK`), so that what one round of the loop
/// writes leaves in full TCP segments instead of one or two small segments per request.
///
/// libcurl writes each HTTP/2 request as its own TLS records, one `send` for the `HEADERS` frame and one
/// for `DATA`; without corking every one becomes a segment on the wire and a wake-up of the peer. A
/// corked socket holds them until ``flush()``, which the loop calls once per round, before it waits for
/// the network again: requests are delayed by at most the rest of that round.
///
/// The loop corks a connection's socket once a transfer has finished on it and libcurl keeps the
/// connection (`CURLINFO_ACTIVESOCKET`), so handshakes and the first request go out as written. A socket
/// leaves the set in libcurl's close callback (``remove(_:)``), through which libcurl closes every socket
/// that has carried a transfer; sockets that never did (failed or losing connect attempts) may be closed
/// without it, and are never in the set, so a descriptor number reused by somebody else is never
/// touched. At most ``limit`` sockets are corked, because every flush costs one `setsockopt` per corked
/// socket; the rest (a loop talking to many hosts, such as Web Push) are left as libcurl made them.
/// Loop-thread only.
struct CorkedSockets {
    /// The limit an ``HTTPClient`` gives each loop when ``HTTPClientConfiguration/coalescesWrites`` is on.
    static let defaultLimit = 16
    /// Most sockets corked at once.
    let limit: Int
    private(set) var sockets: [Int32] = []

    init(limit: Int) { self.limit = limit }

    /// Whether `fd` is corked.
    func contains(_ fd: Int32) -> Bool { sockets.contains(fd) }

    /// Corks a connection socket, unless the set is full or the socket is not TCP.
    /// - Returns: Whether the socket is now corked.
    @discardableResult
    mutating func cork(_ fd: Int32) -> Bool {
        guard sockets.count < limit, herald_tcp_cork(fd) == 0 else { return false }
        sockets.append(fd)
        return true
    }

    /// Forgets a socket libcurl is closing (the caller closes it).
    /// - Returns: Whether the socket was corked.
    mutating func remove(_ fd: Int32) -> Bool {
        guard let index = sockets.firstIndex(of: fd) else { return false }
        sockets.swapAt(index, sockets.count - 1)
        sockets.removeLast()
        return true
    }

    /// Sends whatever the corked sockets hold; they stay corked for the next round.
    func flush() {
        for fd in sockets { _ = herald_tcp_push(fd) }
    }
}
