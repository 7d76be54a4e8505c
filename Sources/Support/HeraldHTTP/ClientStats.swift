import Synchronization

/// Counters shared by a client's loops.
final class ClientStats: Sendable {
    let connectionsOpened = Atomic<Int>(0)
    /// Connection sockets corked right now, over all loops.
    let socketsCorked = Atomic<Int>(0)
}
