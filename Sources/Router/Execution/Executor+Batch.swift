import ChannelAPI
import Foundation
import HeraldSync

/// The batched drain: pending deliveries of many notifications claimed in one statement, attempted
/// grouped per notification and channel, and recorded in one transaction per batch.
extension Executor {
    /// What a drain of pending deliveries did: how many deliveries it attempted, and whether it
    /// stopped with work left (its pass budget ran out, or it gave groups back) for the next pass.
    struct PendingDrain: Sendable {
        /// Deliveries attempted (or handed to ``execute(notificationId:graph:)``).
        var attempted = 0
        /// `true` when claimable work may be left.
        var unfinished = false
    }

    /// Drains the pending deliveries (enqueued notifications, crash leftovers) in batches of
    /// ``chunkSize`` across notifications until none is claimable or `startBy` passes.
    ///
    /// Each batch is claimed in one statement (``HeraldStore/claimPendingBatch(owner:until:now:limit:)``:
    /// only the current step of each notification), attempted, and recorded in one transaction. A
    /// notification whose current step is not the simple case (a `mode: first` step, an
    /// `unless-delivered` condition or a step `timeout`) goes through ``execute(notificationId:graph:)``,
    /// which judges it exactly as `send` does. The next batch is claimed while one runs only when
    /// that one holds plain groups alone (the stores never hand this owner rows it already holds);
    /// a batch with a per-notification item finishes before the next claim.
    func drainPending(graph: RouterGraph, startBy: ContinuousClock.Instant?) async throws -> PendingDrain {
        var drain = PendingDrain()
        let limit = max(1, chunkSize)
        let (store, clock, owner, lease) = (self.store, self.clock, self.owner, self.leaseDuration)
        @Sendable func claim() throws -> PendingBatch {
            let now = clock.now()
            return try store.claimPendingBatch(owner: owner, until: now.adding(lease), now: now, limit: limit)
        }
        var batch = try claim()
        // The results of the batch before, recorded while this one is delivered. It must have
        // committed before this batch's record starts, so records keep their order, and a failed
        // record stops the drain one batch later at most (that batch stays leased, unrecorded, as
        // after any failed record).
        var recording: Task<Void, any Error>?
        while !batch.deliveries.isEmpty {
            if let startBy, ContinuousClock.now >= startBy {
                giveBack(batch.deliveries.map(\.id))
                try await recording?.value
                drain.unfinished = true
                return drain
            }
            let work = items(of: batch)
            // The next claim runs while this batch is delivered and recorded (the database works
            // while Herald does). Only when every item is a plain group: the per-notification path
            // claims its notification's rows as this owner's, and must not meet rows of the same
            // step that a concurrent claim took.
            let prefetch: Task<PendingBatch, any Error>? =
                work.allSatisfy(\.isGroup) ? Task { try claim() } : nil
            let done: AttemptedBatch
            do {
                // A per-notification item reads the results recorded so far.
                if prefetch == nil { try await recording?.value }
                done = await attemptBatch(batch, items: work, graph: graph, startBy: startBy)
                try await recording?.value
            } catch {
                if let next = try? await prefetch?.value { giveBack(next.deliveries.map(\.id)) }
                throw error
            }
            recording = nil
            if let failure = done.failure {
                // Whatever was sent is recorded before the failure is thrown.
                try? record(done)
                if let next = try? await prefetch?.value { giveBack(next.deliveries.map(\.id)) }
                throw failure
            }
            recording = Task { [self] in try record(done) }
            drain.attempted += done.attempted
            if !done.skipped.isEmpty {
                try await recording?.value
                if let next = try? await prefetch?.value { giveBack(next.deliveries.map(\.id)) }
                drain.unfinished = true
                return drain
            }
            do {
                batch = try await prefetch?.value ?? claim()
            } catch {
                try? await recording?.value
                throw error
            }
        }
        try await recording?.value
        return drain
    }

    /// Gives this owner's leases on `ids` up at once (rows claimed but not started), so another
    /// process may take them without waiting for the lease to expire.
    func giveBack(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        do {
            try store.renewLeases(owner: owner, deliveryIds: ids, until: clock.now().addingTimeInterval(-0.001))
        } catch {
            logger.error("cannot give up delivery leases", ["error": "\(error)"])
        }
    }

    /// One unit of a batch: a `(notification, channel)` group of the simple case, or a notification
    /// handed to ``execute(notificationId:graph:)``.
    private enum BatchItem: Sendable {
        case group([DeliveryRecord], StoredNotification)
        case notification(String, [DeliveryRecord])

        var isGroup: Bool {
            if case .group = self { return true }
            return false
        }

        var ids: [String] {
            switch self {
            case .group(let records, _): records.map(\.id)
            case .notification(_, let records): records.map(\.id)
            }
        }
    }

    /// What became of one item.
    private enum BatchOutcome: Sendable {
        /// Attempted; the results to record with the batch (none for an executed notification).
        case attempted(count: Int, results: [AttemptRecord], records: [DeliveryRecord])
        case skipped([String])
        case failed(any Error)
    }

    /// Whether `rule` lets a step run as a plain batch: every channel at once, no condition on
    /// earlier results, no time budget. Anything else is judged by ``execute(notificationId:graph:)``.
    static func isBatchable(_ rule: StepRule) -> Bool {
        rule.mode == .all && rule.unlessDelivered == nil && rule.timeout == nil
    }

    /// Splits a claimed batch into items: the simple `(notification, channel)` groups (in chunks of
    /// at most ``chunkSize``) and the notifications that need ``execute(notificationId:graph:)``.
    private func items(of batch: PendingBatch) -> [BatchItem] {
        var order: [String] = []
        var byNotification: [String: [DeliveryRecord]] = [:]
        byNotification.reserveCapacity(batch.notifications.count)
        for r in batch.deliveries {
            if byNotification[r.notificationId] == nil { order.append(r.notificationId) }
            byNotification[r.notificationId, default: []].append(r)
        }
        var out: [BatchItem] = []
        let size = max(1, chunkSize)
        for id in order {
            let records = byNotification[id] ?? []
            guard let stored = batch.notifications[id], let step = records.first?.step,
                records.allSatisfy({ $0.step == step }),
                Executor.isBatchable(
                    stored.steps[safe: step] ?? StepRule(mode: .all, unlessDelivered: nil, timeout: nil))
            else {
                out.append(.notification(id, records))
                continue
            }
            var channels: [String] = []
            var byChannel: [String: [DeliveryRecord]] = [:]
            for r in records {
                if byChannel[r.channel] == nil { channels.append(r.channel) }
                byChannel[r.channel, default: []].append(r)
            }
            for channel in channels {
                let group = byChannel[channel] ?? []
                for start in stride(from: 0, to: group.count, by: size) {
                    out.append(.group(Array(group[start..<min(group.count, start + size)]), stored))
                }
            }
        }
        return out
    }

    /// What one claimed batch gave: the results of its simple groups (recorded together by
    /// ``record(_:)``), the ids not started, and the first failure.
    struct AttemptedBatch: Sendable {
        var attempted = 0
        var results: [AttemptRecord] = []
        /// The attempted records by delivery id (each knows its channel).
        var recordsById: [String: DeliveryRecord] = [:]
        var skipped: [String] = []
        var failure: (any Error)?
    }

    /// Attempts one claimed batch. Items not started by `startBy` (or after a failure) are given
    /// back at once, so another process may take them without waiting for the lease to expire.
    private func attemptBatch(
        _ batch: PendingBatch, items work: [BatchItem], graph: RouterGraph, startBy: ContinuousClock.Instant?
    ) async -> AttemptedBatch {
        let context = BatchContext(executor: self, graph: graph)
        let stop = PassFailure()
        let outcomes = await holdingLeases(batch.deliveries.map(\.id)) {
            await ConcurrentMap.map(work, limit: 16) { item -> BatchOutcome in
                if stop.error != nil { return .skipped(item.ids) }
                if let startBy, ContinuousClock.now >= startBy { return .skipped(item.ids) }
                switch item {
                case .notification(let id, let records):
                    do {
                        try await self.execute(notificationId: id, graph: graph)
                        return .attempted(count: records.count, results: [], records: [])
                    } catch {
                        stop.set(error)
                        return .failed(error)
                    }
                case .group(let records, let stored):
                    let channel = records.first?.channel ?? ""
                    if let slots = self.slots { await slots.acquire(channel) }
                    let results = await context.collect(records, stored: stored)
                    self.slots?.release(channel)
                    return .attempted(count: records.count, results: results, records: records)
                }
            }
        }
        var done = AttemptedBatch()
        done.recordsById.reserveCapacity(batch.deliveries.count)
        done.results.reserveCapacity(batch.deliveries.count)
        for outcome in outcomes {
            switch outcome {
            case .attempted(let count, let r, let records):
                done.attempted += count
                done.results += r
                for record in records { done.recordsById[record.id] = record }
            case .skipped(let ids): done.skipped += ids
            case .failed(let error): done.failure = done.failure ?? error
            }
        }
        // Given up now rather than left to expire, so another process may take them at once.
        if done.failure == nil { giveBack(done.skipped) }
        return done
    }

    /// Records the results of one attempted batch in one call of ``HeraldStore/record(_:now:)``,
    /// then tells the event subscribers. A failure is logged and thrown: the rows stay leased, and
    /// are attempted again (with the same delivery ids) once the leases expire.
    private func record(_ done: AttemptedBatch) throws {
        let results = done.results
        guard !results.isEmpty else { return }
        let now = clock.now()
        do {
            let removed = try store.record(results, now: now)
            for d in removed {
                let match = results.first {
                    $0.removeDevice?.deviceId == d.deviceId && $0.removeDevice?.platform == d.platform
                }
                let channel = match.flatMap { done.recordsById[$0.deliveryId]?.channel } ?? ""
                events.emit(.deviceRemoved(d, channel: channel, reason: match?.reason ?? "dead"))
            }
        } catch {
            logger.error("cannot record delivery results", ["error": "\(error)"])
            throw error
        }
        guard events.hasSubscribers else { return }
        for a in results {
            guard let r = done.recordsById[a.deliveryId] else { continue }
            events.emit(.delivery(r.applying(a, at: now)))
        }
    }
}

/// What the groups of one batch share: the graph, and per namespace the devices and the pending
/// badge count, each read once.
private final class BatchContext: Sendable {
    let executor: Executor
    let graph: RouterGraph
    private let devices = Locked<[String: [String: Device]]>([:])
    private let badges = Locked<[String: Int?]>([:])

    init(executor: Executor, graph: RouterGraph) {
        self.executor = executor
        self.graph = graph
    }

    /// The namespace's devices by ``Executor/key(_:_:)``, read once per batch.
    func devices(_ namespace: String) -> [String: Device] {
        if let known = devices.withLock({ $0[namespace] }) { return known }
        var lookup: [String: Device] = [:]
        for d in (try? executor.store.devices(namespace: namespace)) ?? [] {
            lookup[Executor.key(d.deviceId, d.platform)] = d
        }
        devices.withLock { $0[namespace] = lookup }
        return lookup
    }

    /// The namespace's pending-tags count, read once per batch.
    func badge(_ namespace: String) -> Int? {
        if let known = badges.withLock({ $0[namespace] }) { return known }
        let count = try? executor.store.pendingTagCount(namespace: namespace)
        badges.withLock { $0[namespace] = count }
        return count
    }

    /// Delivers `records` (one notification, one channel, at most one chunk) and returns the results
    /// to record, as ``Executor/attempt(_:notification:graph:deadline:)`` decides them: devices
    /// resolved now, results matched by delivery id, a missing result a `retry`, a channel no longer
    /// configured `failed`, a disabled one `suppressed`.
    func collect(_ records: [DeliveryRecord], stored: StoredNotification) async -> [AttemptRecord] {
        guard let first = records.first else { return [] }
        let notification = stored.notification
        let expiresAt = notification.ttl.map { stored.createdAt.addingTimeInterval(TimeInterval($0)) }
        guard let spec = graph.spec(first.channel), let channel = graph.channels[first.channel] else {
            return records.map {
                AttemptRecord(
                    deliveryId: $0.id, attempt: $0.attempts, state: .failed,
                    reason: "channel \(first.channel) is no longer configured")
            }
        }
        guard spec.enabled else {
            return records.map {
                AttemptRecord(
                    deliveryId: $0.id, attempt: $0.attempts, state: .suppressed,
                    reason: "channel \(first.channel) is disabled")
            }
        }
        let pendingBadge = spec.badgePendingTags ? badge(notification.namespace) : nil
        let lookup = records.contains { $0.deviceId != nil } ? devices(notification.namespace) : [:]
        return await executor.deliverChunk(
            records, channel: channel, spec: spec, notification: notification, pendingBadge: pendingBadge,
            deadline: nil, devices: lookup, expiresAt: expiresAt)
    }
}
