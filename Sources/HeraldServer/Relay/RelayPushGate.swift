import HeraldSync

/// A bound on the relay pushes one `herald serve` has in flight at once, over every relay request
/// (docs/relay-server.md, "Deliveries"): a request sending to `n` tokens waits until `n` pushes may
/// start (a request for more than the whole bound waits for all of it), waiters served in arrival
/// order. Without it, 100 openchamber clients sending to 100 tokens each put 10,000 provider requests
/// (and their HTTP client transfers) in memory at once; with it, the relay's memory stays flat while
/// the provider connection stays full.
public final class RelayPushGate: Sendable {
    private struct State {
        var free: Int
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// Pushes in flight at most.
    public let capacity: Int
    private let state: Locked<State>

    /// A gate letting `capacity` pushes (at least 1) through at once.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Locked(State(free: max(1, capacity)))
    }

    /// Waits until `count` pushes (at most ``capacity``) may start, and takes them. Pair with
    /// ``release(_:)`` with the same count.
    public func acquire(_ count: Int) async {
        let n = min(max(1, count), capacity)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { s in
                if s.waiters.isEmpty, s.free >= n {
                    s.free -= n
                    return true
                }
                s.waiters.append((n, continuation))
                return false
            }
            if granted { continuation.resume() }
        }
    }

    /// Gives `count` pushes back and starts the waiters that now fit, in order.
    public func release(_ count: Int) {
        let n = min(max(1, count), capacity)
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.free += n
            var out: [CheckedContinuation<Void, Never>] = []
            while let first = s.waiters.first, first.count <= s.free {
                s.free -= first.count
                out.append(first.continuation)
                s.waiters.removeFirst()
            }
            return out
        }
        for c in ready { c.resume() }
    }

    /// Pushes in flight now (tests).
    var inFlight: Int { state.withLock { capacity - $0.free } }

    /// Requests waiting for room (tests).
    var waiting: Int { state.withLock { $0.waiters.count } }
}
