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
                var entry = entries[channel] ?? Entry()
                defer { entries[channel] = entry }
                if entry.busy < limit {
                    entry.busy += 1
                    return true
                }
                entry.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives a slot of `channel` back, handing it to the longest waiter if there is one.
    func release(_ channel: String) {
        let next = state.withLock { entries -> CheckedContinuation<Void, Never>? in
            guard var entry = entries[channel] else { return nil }
            defer { entries[channel] = entry.busy == 0 && entry.waiters.isEmpty ? nil : entry }
            if !entry.waiters.isEmpty { return entry.waiters.removeFirst() }
            entry.busy = max(0, entry.busy - 1)
            return nil
        }
        next?.resume()
    }

    /// Runs `body` holding a slot of `channel`.
    func withSlot<T>(_ channel: String, _ body: () async throws -> T) async rethrows -> T {
        await acquire(channel)
        defer { release(channel) }
        return try await body()
    }
}
