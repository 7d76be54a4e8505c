import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldSync

extension Router {
    // MARK: Outbox

    /// Completes pending deliveries left by a crash and runs due retries. With `untilEmpty`, keeps
    /// going (sleeping until the next retry is due) until nothing is pending or `timeout` passes.
    @discardableResult
    public func drain(untilEmpty: Bool = false, timeout: Duration? = nil) async throws -> DrainSummary {
        let started = options.clock.now()
        var attempted = 0
        // How long to wait before looking again at pending rows another worker holds: short at
        // first (its batch ends in milliseconds, and an `--until-empty` run should end with it),
        // doubling to 200 ms while nothing else happens.
        var heldWait: Duration = .milliseconds(5)
        try releaseDeadLeases()
        while true {
            let g = currentGraph
            // Crash leftovers (and enqueued notifications) and due retries run side by side, and
            // several notifications at once, so a hanging receiver does not hold up the others.
            var pass = self.executor(owner: workerOwner)
            pass.slots = ChannelSlots(limit: pass.groupsPerChannel)
            let executor = pass
            let store = self.store
            // Work not started within the pass's budget waits for the next pass, which also takes
            // what came due meanwhile: a long hanging backlog does not hold up other channels.
            let startBy = ContinuousClock.now + executor.passBudget
            async let retried = executor.runDueRetries(graph: g, startBy: startBy)
            // Pending deliveries (enqueued notifications, crash leftovers) in batches across
            // notifications: one claim statement and one recording transaction per batch.
            let pending: Result<Executor.PendingDrain, any Error>
            do { pending = .success(try await executor.drainPending(graph: g, startBy: startBy)) } catch {
                pending = .failure(error)
            }
            let retries = try await retried
            let drained = try pending.get()
            attempted += retries.attempted + drained.attempted
            if retries.attempted + drained.attempted > 0 { heldWait = .milliseconds(5) }
            let leftOver = retries.skipped + (drained.unfinished ? 1 : 0)
            if leftOver > 0 {
                if let timeout, options.clock.now() >= started.adding(timeout) {
                    let counts = try store.outstandingCounts()
                    return DrainSummary(attempted: attempted, remaining: counts.pending + counts.retry)
                }
                continue
            }
            let counts = try store.outstandingCounts()
            let remaining = counts.pending + counts.retry
            guard untilEmpty, remaining > 0 else { return DrainSummary(attempted: attempted, remaining: remaining) }
            let now = options.clock.now()
            if let timeout, now >= started.adding(timeout) {
                return DrainSummary(attempted: attempted, remaining: remaining)
            }
            var wait: Duration = .seconds(1)
            if let next = try store.nextDueTime() {
                wait = .milliseconds(max(1, min(Int64(clamping: next.timeIntervalSince(now) * 1000), 60_000)))
            }
            // Pending rows another worker holds: look again soon (its batch ends in milliseconds,
            // or its lease expires and the rows become claimable).
            if counts.pending > 0 {
                wait = min(wait, heldWait)
                heldWait = min(heldWait * 2, .milliseconds(200))
            }
            if let timeout {
                let left = Int64(clamping: started.adding(timeout).timeIntervalSince(now) * 1000)
                wait = min(wait, .milliseconds(max(1, left)))
            }
            try await options.clock.sleep(for: wait)
        }
    }

    /// Releases at once the outbox leases of processes proven gone (crash recovery): only owners of
    /// this PID space whose pid no longer runs (``LeaseOwner``). Every other lease is left to expire
    /// by time; its holder renews it while it works.
    func releaseDeadLeases() throws {
        let pid = getpid()
        let dead = try store.leaseOwners().filter { owner in
            LeaseOwner.isGone(
                owner, me: self.owner, localHost: host, currentPID: pid, processExists: LeaseOwner.processExists)
        }
        if !dead.isEmpty { try store.releaseLeases(ownedBy: dead) }
    }

    /// The long-running worker: receives inbound channel events, runs due retries, purges history
    /// past retention. Returns when the calling task is cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            let g = currentGraph
            for (_, channel) in g.channels {
                group.addTask { await channel.receive(into: RouterEventSink(router: self)) }
            }
            group.addTask {
                var lastPurge = Date.distantPast
                while !Task.isCancelled {
                    do {
                        _ = try await self.drain()
                        let now = self.options.clock.now()
                        if now.timeIntervalSince(lastPurge) > 3600 {
                            _ = try self.store.purge(
                                before: now.addingTimeInterval(-self.config.retention.timeInterval))
                            lastPurge = now
                        }
                        var wait: Duration = .seconds(1)
                        if let next = try self.store.nextDueTime() {
                            let ms = Int64(clamping: next.timeIntervalSince(now) * 1000)
                            wait = .milliseconds(max(10, min(ms, 1000)))
                        }
                        try await self.idle(for: wait)
                    } catch is CancellationError {
                        return
                    } catch {
                        if let reason = StoreHealth.unavailableReason(of: error) {
                            self.storeHealth.noteFailure(reason, at: self.options.clock.now())
                        }
                        self.logger.error("worker pass failed", ["error": "\(error)"])
                        try? await self.options.clock.sleep(for: .seconds(1))
                    }
                }
            }
            await group.waitForAll()
        }
    }
}
