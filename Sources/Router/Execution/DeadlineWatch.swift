import HeraldSync

/// One timer for many deadlines: the outer bound of every `deliver` call is watched here instead of
/// by a sleeping task of its own.
///
/// A bound almost never fires: the call returns long before it and the deadline is removed. A
/// sleeping task per call still cost a dispatch timer to arm and to cancel, which was about a fifth
/// of a drain worker's CPU when each notification had one delivery (one `deliver` call each). Here
/// one task sleeps until the earliest deadline; adding a later deadline, or removing one, touches
/// only a dictionary under a lock.
final class DeadlineWatch: Sendable {
    /// The watch every executor uses.
    static let shared = DeadlineWatch()

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let fire: @Sendable () -> Void
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextId = 0
        /// The sleeping task's generation and the instant it wakes at; nil when none sleeps.
        var sleeper: (generation: Int, wake: ContinuousClock.Instant)?
        var generation = 0
    }

    private let state = Locked(State())
    private let clock = ContinuousClock()

    /// How many deadlines are watched (for tests).
    var count: Int { state.withLock { $0.entries.count } }

    /// Calls `fire` once `duration` has passed, unless ``remove(_:)`` comes first. `fire` runs on
    /// the watch's task: it must be quick and must not block. Returns the id to remove it with.
    func add(after duration: Duration, _ fire: @escaping @Sendable () -> Void) -> Int {
        let deadline = clock.now.advanced(by: duration)
        let (id, start) = state.withLock { s -> (Int, Int?) in
            let id = s.nextId
            s.nextId += 1
            s.entries[id] = Entry(deadline: deadline, fire: fire)
            if let sleeper = s.sleeper, sleeper.wake <= deadline { return (id, nil) }
            // No task sleeps, or it wakes too late for this deadline: a new one takes over (the old
            // one sees its generation is stale when it wakes and ends).
            s.generation += 1
            s.sleeper = (s.generation, deadline)
            return (id, s.generation)
        }
        if let start { spawn(generation: start, wake: deadline, priority: Task.currentPriority) }
        return id
    }

    /// Stops watching `id`; its `fire` will not be called (unless it is running already).
    func remove(_ id: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// Starts the task that sleeps until `wake`, at the priority of the caller whose deadline it
    /// watches, as a timer task of that caller's own would run. (At a fixed high priority it fired
    /// on time while the work it bounds waited for a thread on a loaded machine, turning answers
    /// already in hand into "timed out"; at the default priority it starved behind higher-priority
    /// work.)
    private func spawn(generation: Int, wake: ContinuousClock.Instant, priority: TaskPriority) {
        Task.detached(priority: priority) { [self] in
            var wake = wake
            while true {
                try? await Task.sleep(until: wake, clock: clock)
                let now = clock.now
                let (due, next) = state.withLock { s -> ([@Sendable () -> Void], ContinuousClock.Instant?) in
                    guard s.sleeper?.generation == generation else { return ([], nil) }
                    var due: [Entry] = []
                    var earliest: ContinuousClock.Instant?
                    for (id, entry) in s.entries {
                        if entry.deadline <= now {
                            due.append(entry)
                            s.entries[id] = nil
                        } else if earliest.map({ entry.deadline < $0 }) ?? true {
                            earliest = entry.deadline
                        }
                    }
                    s.sleeper = earliest.map { (generation, $0) }
                    return (due.sorted { $0.deadline < $1.deadline }.map(\.fire), earliest)
                }
                for fire in due { fire() }
                guard let next else { return }
                wake = next
            }
        }
    }
}
