import HeraldSync

/// Values handed from any task to one waiting task, in the order they were put: what
/// ``Executor/deliver(requestTimeout:bound:grace:_:)`` waits on (the channel's answer, or `nil`
/// from a timer, whichever comes first).
///
/// It does the one thing an `AsyncStream` did there, without a stream's storage, generic state
/// machine and iterator per call: one lock, a buffer and at most one waiting continuation. A value
/// put while nobody waits is kept for the next ``take()``; only one task may wait at a time.
final class Mailbox<Value: Sendable>: Sendable {
    private struct State {
        var buffered: [Value] = []
        var waiter: UnsafeContinuation<Value, Never>?
    }

    private let state = Locked(State())

    /// Hands `value` to the waiting task, or keeps it for the next ``take()``.
    func put(_ value: Value) {
        let waiter = state.withLock { s -> UnsafeContinuation<Value, Never>? in
            guard let w = s.waiter else {
                s.buffered.append(value)
                return nil
            }
            s.waiter = nil
            return w
        }
        waiter?.resume(returning: value)
    }

    /// The oldest value not taken yet, waiting for one if there is none. Cancellation does not end
    /// the wait: whoever puts must put (the callers arm a timer that always does).
    func take() async -> Value {
        await withUnsafeContinuation { (c: UnsafeContinuation<Value, Never>) in
            let ready = state.withLock { s -> Value? in
                if !s.buffered.isEmpty { return s.buffered.removeFirst() }
                s.waiter = c
                return nil
            }
            if let ready { c.resume(returning: ready) }
        }
    }
}
