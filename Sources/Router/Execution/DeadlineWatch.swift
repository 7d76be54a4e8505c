import Foundation

/// One timer for many deadlines: the outer bound of every `deliver` call is watched here instead of
/// by a sleeping task of its own.
///
/// A bound almost never fires: the call returns long before it and the deadline is removed. A
/// sleeping task per call still cost a dispatch timer to arm and to cancel, which was about a fifth
/// of a drain worker's CPU when each notification had one delivery (one `deliver` call each). Here
/// one thread waits until the earliest deadline; adding a later deadline, or removing one, touches
/// only a dictionary under a lock, and only an earlier deadline wakes the thread.
///
/// A thread, not a task: a deadline is what cuts a call that holds up its worker, so it must fire on
/// time when the concurrency pool is busy (two cores, every thread of the pool blocked or running
/// long work). A sleeping task waited for a free pool thread, and in full test runs on a loaded
/// machine a deadline was seen to fire more than 90 s late.
final class DeadlineWatch: @unchecked Sendable {
    /// The watch every executor uses.
    static let shared = DeadlineWatch()

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let fire: @Sendable () -> Void
    }

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var entries: [Int: Entry] = [:]
    private var nextId = 0
    private var started = false
    /// The deadline the thread waits for; nil while it waits for any entry (or has not started).
    private var waitingUntil: ContinuousClock.Instant?
    private let clock = ContinuousClock()

    /// Deadlines not yet fired or removed.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return entries.count
    }

    /// Calls `fire` once `duration` has passed, unless ``remove(_:)`` comes first. `fire` runs on the
    /// watch's thread: it must be quick and must not block.
    /// - Returns: The id ``remove(_:)`` takes.
    func add(after duration: Duration, _ fire: @escaping @Sendable () -> Void) -> Int {
        let deadline = clock.now.advanced(by: duration)
        condition.lock()
        defer { condition.unlock() }
        let id = nextId
        nextId += 1
        entries[id] = Entry(deadline: deadline, fire: fire)
        if !started {
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "herald-deadlines"
            thread.start()
        } else if waitingUntil.map({ deadline < $0 }) ?? true {
            condition.signal()
        }
        return id
    }

    /// Forgets a deadline (its call returned first). The thread is not woken: it finds nothing due.
    func remove(_ id: Int) {
        condition.lock()
        entries[id] = nil
        condition.unlock()
    }

    /// The thread: fires what is due, in deadline order, then waits for the earliest deadline left (or
    /// for an entry).
    private func run() {
        condition.lock()
        while true {
            let now = clock.now
            var due: [Entry] = []
            var earliest: ContinuousClock.Instant?
            for (id, entry) in entries {
                if entry.deadline <= now {
                    due.append(entry)
                    entries[id] = nil
                } else if earliest.map({ entry.deadline < $0 }) ?? true {
                    earliest = entry.deadline
                }
            }
            if !due.isEmpty {
                condition.unlock()
                for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.fire() }
                condition.lock()
                continue
            }
            waitingUntil = earliest
            if let earliest {
                let wait = now.duration(to: earliest).components
                let seconds = Double(wait.seconds) + Double(wait.attoseconds) / 1e18
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
            } else {
                condition.wait()
            }
            waitingUntil = nil
        }
    }
}
