import Dispatch
import HeraldSync

/// Group commit: requests hand their item to ``submit(_:)`` and wait; one committer stores the
/// items gathered so far in one call of `commit` (one store transaction), answers each waiter with
/// its own result, and goes on with what arrived meanwhile.
///
/// No timer and no added latency: an idle committer starts at once on a lone item, and items that
/// arrive while a commit runs join the next one (at most ``limit`` a commit). A waiter is answered
/// only after the commit that holds its item has returned.
final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    typealias Waiter = (item: Item, answer: CheckedContinuation<Result<Output, any Error>, Never>)

    struct State {
        var waiting: [Waiter] = []
        /// True while a committer runs (or is queued to run).
        var committing = false
    }

    /// The most items one commit takes.
    let limit: Int
    private let state = Locked(State())
    private let commit: @Sendable ([Item]) -> [Result<Output, any Error>]
    /// Where the committer runs: its blocking store call holds no request handler's thread.
    private let queue: DispatchQueue

    /// A group commit of at most `limit` items per `commit` call; `commit` returns one result per
    /// item, in order.
    init(label: String, limit: Int, commit: @escaping @Sendable ([Item]) -> [Result<Output, any Error>]) {
        self.limit = max(1, limit)
        self.commit = commit
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    /// How many items wait for a commit (not counting those of the commit running now).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Stores `item` with the next commit and returns its own result once that commit is done.
    func submit(_ item: Item) async -> Result<Output, any Error> {
        await withCheckedContinuation { answer in
            let start = state.withLock { s -> Bool in
                s.waiting.append((item, answer))
                if s.committing { return false }
                s.committing = true
                return true
            }
            if start { queue.async { self.run() } }
        }
    }

    /// Commits batches until nothing waits.
    private func run() {
        while let batch = nextBatch() {
            let results = commit(batch.map(\.item))
            for (i, waiter) in batch.enumerated() {
                waiter.answer.resume(
                    returning: i < results.count ? results[i] : .failure(GroupCommitError.noResult))
            }
        }
    }

    private func nextBatch() -> [Waiter]? {
        state.withLock { s in
            if s.waiting.isEmpty {
                s.committing = false
                return nil
            }
            let n = min(limit, s.waiting.count)
            let batch = Array(s.waiting[..<n])
            s.waiting.removeFirst(n)
            return batch
        }
    }
}

/// A commit that returned fewer results than it was given items (a bug in the commit function).
enum GroupCommitError: Error, CustomStringConvertible {
    case noResult

    var description: String { "the group commit gave no result for this item" }
}
