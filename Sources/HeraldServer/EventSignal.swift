import Foundation
import HeraldSync

/// Wakes event-stream writers when the router reports something: each waiter sleeps until the
/// next ``notify()`` or its timeout, whichever comes first (no polling loop per subscriber).
final class EventSignal: Sendable {
    struct State {
        var generation = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextId: UInt64 = 0
        /// Waits ended (by timeout) before their continuation was registered.
        var ended: Set<UInt64> = []
    }

    private let state = Locked(State())

    /// The current generation; pass it to ``wait(after:timeout:)``.
    var generation: Int { state.withLock { $0.generation } }

    /// Wakes every waiter.
    func notify() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.generation += 1
            let w = Array(s.waiters.values)
            s.waiters.removeAll()
            return w
        }
        for w in waiters { w.resume() }
    }

    /// Returns after the next notification following `generation`, after `timeout`, or on cancellation.
    func wait(after generation: Int, timeout: Duration) async {
        let id = state.withLock { s -> UInt64 in
            s.nextId += 1
            return s.nextId
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let resumeNow = self.state.withLock { s -> Bool in
                        if s.generation != generation || s.ended.remove(id) != nil { return true }
                        s.waiters[id] = c
                        return false
                    }
                    if resumeNow { c.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                self.resume(id)
            }
            await group.next()
            group.cancelAll()
            self.resume(id)
        }
        state.withLock { _ = $0.ended.remove(id) }
    }

    private func resume(_ id: UInt64) {
        let c = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let c = s.waiters.removeValue(forKey: id) { return c }
            s.ended.insert(id)
            return nil
        }
        c?.resume()
    }
}
