import HeraldSync

/// A counting semaphore per channel name: at most `limit` holders per channel at once, waiters served
/// in arrival order. The worker (`drain`, `run`) attempts due work through it, so a channel whose
/// receiver hangs holds only its own slots and its backlog waits there, while other channels proceed.
final class ChannelSlots: Sendable {
    private struct Entry {
        var busy = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Most holders per channel (at least 1).
    let limit: Int
    private let state = Locked<[String: Entry]>([:])

    /// Creates slots with `limit` holders per channel.
    init(limit: Int) { self.limit = max(1, limit) }

    /// Waits for a free slot of `channel` and takes it. Pair with ``release(_:)``.
    func acquire(_ channel: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { entries in
                Self.take(&entries[channel, default: Entry()], limit: limit, else: continuation)
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives a slot of `channel` back, handing it to the longest waiter if there is one.
    /// How many callers wait for a slot of `channel` (tests: a waiter has queued).
    func waiting(_ channel: String) -> Int { state.withLock { $0[channel]?.waiters.count ?? 0 } }

    func release(_ channel: String) {
        let next = state.withLock { entries in Self.give(&entries[channel]) }
        next?.resume()
    }

    // The entry is changed in place (`inout` through the dictionary's subscript): a copy taken out
    // and stored back would copy its waiter list on every call.

    /// Takes a slot of `entry` when one is free (`true`), else queues `continuation`.
    private static func take(
        _ entry: inout Entry, limit: Int, else continuation: CheckedContinuation<Void, Never>
    ) -> Bool {
        if entry.busy < limit {
            entry.busy += 1
            return true
        }
        entry.waiters.append(continuation)
        return false
    }

    /// Gives a slot of `entry` back: to the longest waiter (returned) if there is one. An entry left
    /// holding nothing is removed.
    private static func give(_ entry: inout Entry?) -> CheckedContinuation<Void, Never>? {
        if entry?.waiters.isEmpty == false { return entry?.waiters.removeFirst() }
        entry?.busy -= 1
        if (entry?.busy ?? 0) <= 0 { entry = nil }
        return nil
    }

    /// Runs `body` holding a slot of `channel`.
    func withSlot<T>(_ channel: String, _ body: () async throws -> T) async rethrows -> T {
        await acquire(channel)
        defer { release(channel) }
        return try await body()
    }
}
