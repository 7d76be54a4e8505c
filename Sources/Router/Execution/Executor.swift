import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldSync

/// Runs planned deliveries: step by step, the channels of a step concurrently, recording every
/// outcome in the outbox. Resumable: everything it decides is read back from the store, so the
/// same code completes a notification after a crash or continues it after a reload.
struct Executor: Sendable {
    let store: any HeraldStore
    let clock: any HeraldClock
    let random: any RandomSource
    let events: EventHub
    let logger: ChannelLogger
    /// Lease owner id of this process.
    let owner: String
    /// Targets handed to a channel per call. Results are recorded when a call returns, so
    /// `chunkSize × chunksInFlight` (500) bounds the deliveries a crash can leave sent but unrecorded,
    /// which a restarted process sends again (with the same delivery id).
    var chunkSize = 125
    /// Chunks of one notification and channel in flight at once. A `deliver` call ends with a tail
    /// in which its last requests finish and nothing new starts; with several calls in flight the
    /// next chunk's requests fill that gap (and its payloads are built while the others send).
    var chunksInFlight = 4
    /// How long a claim lasts without renewal. The executor renews the leases it holds every third of
    /// this (wall time) while it works on them, so a live holder never loses them; a crashed holder's
    /// leases expire after at most this long.
    var leaseDuration: Duration = .seconds(60)
    /// `(notification, channel)` groups of due retries one channel attempts at once. Channels run
    /// independently, so a hanging receiver occupies only its own channel's slots; two slots stay
    /// below the HTTP client's default of four connections per host, so a channel hanging on a host
    /// shared with another channel leaves connections to the other one.
    var groupsPerChannel = 2
    /// When set (by the worker), every `(notification, channel)` attempt holds one of its channel's
    /// slots, so a hanging channel's backlog waits there instead of filling connections that other
    /// channels on the same host need. `send` leaves it nil: its first attempts are not limited.
    var slots: ChannelSlots?
    /// Wall time after which a worker pass starts no new `(notification, channel)` group (see
    /// ``runDueRetries(graph:limit:startBy:)``), so a channel with a long hanging backlog cannot keep
    /// a pass, and the due work of other channels that comes due meanwhile, waiting.
    var passBudget: Duration = .seconds(10)

    // MARK: First attempts, step by step

    /// Runs every pending delivery of a notification, honouring step order and conditions (reads the
    /// stored notification first: the worker's path).
    func execute(notificationId: String, graph: RouterGraph) async throws {
        guard let stored = try store.notification(id: notificationId) else { return }
        try await execute(stored, graph: graph)
    }

    /// Runs every pending delivery of `stored`, which the caller already holds (``Router`` just
    /// persisted it), honouring step order and conditions. Steps are decided on counts
    /// (``HeraldStore/deliveryTallies(notificationId:)``), and each channel's deliveries are claimed
    /// in pages, so memory does not grow with the fan-out.
    func execute(_ stored: StoredNotification, graph: RouterGraph) async throws {
        let notificationId = stored.notification.id
        var tallies = try store.deliveryTallies(notificationId: notificationId)
        let stepIndexes = Array(Set(tallies.map(\.step))).sorted()
        for index in stepIndexes {
            let rule = stored.steps[safe: index] ?? StepRule(mode: .all, unlessDelivered: nil, timeout: nil)
            let inStep = tallies.filter { $0.step == index }
            guard inStep.contains(where: { $0.state == .pending }) else { continue }
            if let unless = rule.unlessDelivered {
                let deliveredEarlier = Set(tallies.filter { $0.step < index && $0.state == .delivered }.map(\.channel))
                let hits: [String] =
                    switch unless {
                    case .any: deliveredEarlier.sorted()
                    case .channels(let names): names.filter { deliveredEarlier.contains($0) }
                    }
                if !hits.isEmpty {
                    try suppressPending(
                        notificationId, step: index, channels: nil,
                        reason: "unless-delivered: \(hits.joined(separator: ", "))")
                    tallies = try store.deliveryTallies(notificationId: notificationId)
                    continue
                }
            }
            let deadline = rule.timeout.map { clock.now().adding($0) }
            let channelsInOrder = orderedChannels(inStep)
            switch rule.mode {
            case .all:
                let failure = await withTaskGroup(of: (any Error)?.self) { group in
                    for channel in channelsInOrder {
                        group.addTask {
                            await self.runPending(
                                stored: stored, step: index, channel: channel, graph: graph, deadline: deadline
                            ).failure
                        }
                    }
                    var first: (any Error)?
                    for await failure in group where first == nil { first = failure }
                    return first
                }
                // The store could not claim or record: stop before later steps send anything.
                if let failure { throw failure }
            case .first:
                for (i, channel) in channelsInOrder.enumerated() {
                    let already = tallies.contains {
                        $0.step == index && $0.channel == channel && $0.state == .delivered
                    }
                    let rest = Set(channelsInOrder[(i + 1)...])
                    if !already {
                        // A delivered result suppresses the later channels' rows in the transaction that
                        // records it: one write, and no read of the tallies to decide.
                        let suppression =
                            rest.isEmpty
                            ? nil
                            : StepSuppression(
                                notificationId: notificationId, step: index, channels: rest,
                                reason: "mode first: delivered by \(channel)")
                        let ran = await runPending(
                            stored: stored, step: index, channel: channel, graph: graph, deadline: deadline,
                            suppression: suppression)
                        if let failure = ran.failure { throw failure }
                        if ran.suppressedRest { break }
                    }
                    let now = try store.deliveryTallies(notificationId: notificationId)
                    if now.contains(where: { $0.step == index && $0.channel == channel && $0.state == .delivered }) {
                        if !rest.isEmpty {
                            try suppressPending(
                                notificationId, step: index, channels: rest,
                                reason: "mode first: delivered by \(channel)")
                        }
                        break
                    }
                }
            }
            // Later steps decide on what this one recorded; the last step needs no reload.
            if index != stepIndexes.last { tallies = try store.deliveryTallies(notificationId: notificationId) }
        }
    }

    private func orderedChannels(_ tallies: [DeliveryTally]) -> [String] {
        var seen: [String: Int] = [:]
        for t in tallies { seen[t.channel] = min(seen[t.channel] ?? t.position, t.position) }
        return seen.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.map(\.key)
    }

    /// Suppresses the pending deliveries of one step (of `channels` only, when given), in pages.
    private func suppressPending(_ notificationId: String, step: Int, channels: Set<String>?, reason: String) throws {
        var pending: [DeliveryRecord] = []
        try store.forEachDelivery(notificationId: notificationId) { r in
            guard r.step == step, r.state == .pending, channels?.contains(r.channel) ?? true else { return }
            pending.append(r)
            if pending.count >= 1_000 {
                try suppress(pending, reason: reason)
                pending.removeAll(keepingCapacity: true)
            }
        }
        try suppress(pending, reason: reason)
    }

    private func suppress(_ records: [DeliveryRecord], reason: String) throws {
        guard !records.isEmpty else { return }
        let now = clock.now()
        try store.suppress(deliveryIds: records.map(\.id), reason: reason, now: now)
        for var r in records {
            r.state = .suppressed
            r.reason = reason
            r.updatedAt = now
            events.emit(.delivery(r))
        }
    }

    /// Claims and attempts one channel's pending deliveries of a step, a page
    /// (`chunkSize × chunksInFlight`) at a time as the chunks in flight need them; returns the store
    /// failure (claim or record) that stopped it, and whether a delivered result's record suppressed
    /// every pending row of `suppression`.
    private func runPending(
        stored: StoredNotification, step: Int, channel: String, graph: RouterGraph, deadline: Date?,
        suppression: StepSuppression? = nil
    ) async -> (failure: (any Error)?, suppressedRest: Bool) {
        let (store, clock, owner, lease) = (self.store, self.clock, self.owner, self.leaseDuration)
        let notificationId = stored.notification.id
        let pageSize = max(1, chunkSize) * max(1, chunksInFlight)
        // Rows born leased to this sender are read, not claimed again, while half their lease is left
        // (the claim's write was a fifth of a waiting local push's store time); later pages of a long
        // fan-out are claimed, which extends their leases.
        let bornLeasedUntil = stored.leasedUntil
        let source = ChunkSource(chunkSize: max(1, chunkSize)) { after in
            let now = clock.now()
            if let until = bornLeasedUntil, now.adding(lease / 2) < until {
                return try store.leasedPending(
                    notificationId: notificationId, step: step, channel: channel, owner: owner,
                    until: now.adding(lease), now: now, after: after, limit: pageSize)
            }
            return try store.claimPending(
                notificationId: notificationId, step: step, channel: channel, owner: owner,
                until: now.adding(lease), now: now, after: after, limit: pageSize)
        }
        let suppressed = Locked(false)
        let failure = await attempt(
            source, notification: stored.notification, createdAt: stored.createdAt, graph: graph, deadline: deadline,
            channelName: channel, suppression: suppression.map { ($0, suppressed) })
        return (failure, suppressed.withLock { $0 })
    }

    // MARK: Leases

    /// Runs `body` while renewing this owner's leases on `ids` every third of ``leaseDuration``
    /// (wall time; the new expiry is read from the injected clock). Rows whose result has been
    /// recorded are no longer leased and are left alone.
    func holdingLeases<T>(_ ids: [String], _ body: () async throws -> T) async rethrows -> T {
        guard !ids.isEmpty else { return try await body() }
        return try await holdingLeases(current: { ids }, body)
    }

    /// Runs `body` while renewing this owner's leases on the ids `current` returns at each renewal
    /// (the rows claimed and not yet recorded, for a fan-out claimed page by page).
    func holdingLeases<T>(current: @escaping @Sendable () -> [String], _ body: () async throws -> T) async rethrows
        -> T
    {
        let (store, clock, owner, logger) = (self.store, self.clock, self.owner, self.logger)
        let lease = max(leaseDuration, .milliseconds(30))
        let renewer = Task {
            while true {
                do { try await Task.sleep(for: lease / 3) } catch { return }
                let ids = current()
                guard !ids.isEmpty, !Task.isCancelled else { continue }
                do {
                    try store.renewLeases(owner: owner, deliveryIds: ids, until: clock.now().adding(lease))
                } catch {
                    logger.error("cannot renew delivery leases", ["error": "\(error)"])
                }
            }
        }
        // The renewer has stopped before this returns: a renewal that had begun when `body` ended
        // would otherwise land after the caller gave the rows back (or after a test moved its clock)
        // and hold them for another whole lease.
        do {
            let value = try await body()
            renewer.cancel()
            await renewer.value
            return value
        } catch {
            renewer.cancel()
            await renewer.value
            throw error
        }
    }

    // MARK: Retries

    /// Claims and attempts every due retry; returns how many deliveries were attempted and how many
    /// were left for the next pass.
    ///
    /// Due work of different channels proceeds independently: each channel works through its own
    /// `(notification, channel)` groups, at most ``groupsPerChannel`` at once, so a hanging receiver
    /// delays only its own channel's retries. A group not started by `startBy` is left (its lease
    /// given up) for the next pass, which also picks up whatever came due meanwhile.
    func runDueRetries(graph: RouterGraph, limit: Int = 5_000, startBy: ContinuousClock.Instant? = nil) async throws
        -> (attempted: Int, skipped: Int)
    {
        let due = try store.claimDue(
            owner: owner, until: clock.now().adding(leaseDuration), now: clock.now(), limit: limit)
        guard !due.isEmpty else { return (0, 0) }
        var groups: [String: [DeliveryRecord]] = [:]
        var byChannel: [String: [String]] = [:]
        var channelOrder: [String] = []
        for r in due {
            let key = r.notificationId + "\u{0}" + r.channel
            if groups[key] == nil {
                if byChannel[r.channel] == nil { channelOrder.append(r.channel) }
                byChannel[r.channel, default: []].append(key)
            }
            groups[key, default: []].append(r)
        }
        let work = groups
        // A group that fails stops the pass: no other group starts.
        let stop = PassFailure()
        let outcomes = await holdingLeases(due.map(\.id)) {
            await withTaskGroup(of: [GroupOutcome].self) { group in
                for channel in channelOrder {
                    let keys = byChannel[channel] ?? []
                    group.addTask {
                        await ConcurrentMap.map(keys, limit: max(1, self.groupsPerChannel)) { key -> GroupOutcome in
                            guard let records = work[key], let first = records.first else { return .done }
                            if stop.error != nil { return .done }
                            if let startBy, ContinuousClock.now >= startBy { return .skipped(records.map(\.id)) }
                            do {
                                guard let stored = try self.store.notification(id: first.notificationId) else {
                                    return .done
                                }
                                if let failure = await self.attempt(
                                    ChunkSource(records, chunkSize: self.chunkSize), notification: stored.notification,
                                    createdAt: stored.createdAt, graph: graph, deadline: nil, channelName: first.channel
                                ) {
                                    stop.set(failure)
                                    return .failed(failure)
                                }
                                return .done
                            } catch {
                                stop.set(error)
                                return .failed(error)
                            }
                        }
                    }
                }
                var all: [GroupOutcome] = []
                for await outcomes in group { all += outcomes }
                return all
            }
        }
        var skipped: [String] = []
        for case .skipped(let ids) in outcomes { skipped += ids }
        if !skipped.isEmpty {
            // Given up now rather than left to expire, so another process may take them at once.
            do {
                try store.renewLeases(owner: owner, deliveryIds: skipped, until: clock.now().addingTimeInterval(-0.001))
            } catch {
                logger.error("cannot give up delivery leases", ["error": "\(error)"])
            }
        }
        for case .failed(let error) in outcomes { throw error }
        return (due.count - skipped.count, skipped.count)
    }

    /// What became of one `(notification, channel)` group of a pass.
    private enum GroupOutcome: Sendable {
        case done
        case skipped([String])
        case failed(any Error)
    }

    // MARK: One batch through one channel

    /// Attempts `records` (all of one notification and one channel), in chunks, recording results.
    /// When results cannot be recorded, no further chunk is sent and the failure is returned.
    @discardableResult
    func attempt(_ records: [DeliveryRecord], notification: HeraldNotification, graph: RouterGraph, deadline: Date?)
        async
        -> (any Error)?
    {
        guard let first = records.first else { return nil }
        return await attempt(
            ChunkSource(records, chunkSize: max(1, chunkSize)), notification: notification, createdAt: nil,
            graph: graph, deadline: deadline, channelName: first.channel)
    }

    /// Attempts the deliveries `source` hands out (all of one notification and one channel), with
    /// ``chunksInFlight`` chunks in flight, each recorded when its call returns. A worker takes the next
    /// chunk (claiming the next page when the source needs one) only after recording its last one, and
    /// nothing new is taken once a claim or a record failed: the failure is returned, and rows claimed
    /// but not sent stay leased, unsent, until the lease expires.
    ///
    /// With `suppression`, each chunk's results are recorded with it
    /// (``HeraldStore/record(_:now:suppressing:)``), and its flag is set once a record left none of
    /// its rows pending.
    func attempt(
        _ source: ChunkSource, notification: HeraldNotification, createdAt: Date?, graph: RouterGraph,
        deadline: Date?, channelName: String, suppression: (rule: StepSuppression, hit: Locked<Bool>)? = nil
    ) async -> (any Error)? {
        guard let spec = graph.spec(channelName), let channel = graph.channels[channelName] else {
            return recordFinal(
                source, state: .failed, reason: "channel \(channelName) is no longer configured",
                notification: notification)
        }
        guard spec.enabled else {
            return recordFinal(
                source, state: .suppressed, reason: "channel \(channelName) is disabled", notification: notification)
        }
        var pendingBadge: Int?
        if spec.badgePendingTags {
            pendingBadge = try? store.pendingTagCount(namespace: notification.namespace)
        }
        // The expiry is read once per batch (the router passes the creation time it holds).
        var expires: Date?
        if let ttl = notification.ttl {
            let created = createdAt ?? (try? store.notification(id: notification.id))?.createdAt
            expires = created?.addingTimeInterval(TimeInterval(ttl))
        }
        let badge = pendingBadge
        let expiresAt = expires
        let failure = RecordFailure()
        let (store, logger) = (self.store, self.logger)
        let held: @Sendable () -> [String] = { source.held }
        if let slots { await slots.acquire(channelName) }
        await holdingLeases(current: held) {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<max(1, chunksInFlight) {
                    group.addTask {
                        // A chunk whose results could not be recorded stops the rest: they stay claimed, unsent.
                        while failure.error == nil {
                            let chunk: [DeliveryRecord]
                            var devices: [String: Device] = [:]
                            do {
                                guard let next = try source.next() else { return }
                                chunk = next
                                // Resolve this chunk's devices (one query), not the whole namespace.
                                let keys = chunk.compactMap { r in
                                    r.deviceId.flatMap { id in r.platform.map { (deviceId: id, platform: $0) } }
                                }
                                if !keys.isEmpty {
                                    for d in try store.devices(namespace: notification.namespace, keys: keys) {
                                        devices[Executor.key(d.deviceId, d.platform)] = d
                                    }
                                }
                            } catch {
                                logger.error("cannot claim deliveries", ["channel": channelName, "error": "\(error)"])
                                failure.set(error)
                                return
                            }
                            if let error = await self.attemptChunk(
                                chunk, channel: channel, spec: spec, notification: notification, pendingBadge: badge,
                                deadline: deadline, devices: devices, expiresAt: expiresAt, suppression: suppression)
                            {
                                failure.set(error)
                            }
                            source.finished(chunk)
                        }
                    }
                }
            }
        }
        slots?.release(channelName)
        return failure.error
    }

    private func attemptChunk(
        _ chunk: [DeliveryRecord], channel: any Channel, spec: ChannelSpec, notification: HeraldNotification,
        pendingBadge: Int?, deadline: Date?, devices: [String: Device], expiresAt: Date?,
        suppression: (rule: StepSuppression, hit: Locked<Bool>)?
    ) async -> (any Error)? {
        let attempts = await deliverChunk(
            chunk, channel: channel, spec: spec, notification: notification, pendingBadge: pendingBadge,
            deadline: deadline, devices: devices, expiresAt: expiresAt)
        let now = clock.now()
        var suppressed: [DeliveryRecord] = []
        do {
            let removed: [Device]
            if let suppression {
                let recorded = try store.record(attempts, now: now, suppressing: suppression.rule)
                (removed, suppressed) = (recorded.removed, recorded.suppressed)
                if recorded.complete { suppression.hit.withLock { $0 = true } }
            } else {
                removed = try store.record(attempts, now: now)
            }
            for d in removed {
                let reason = attempts.first { $0.removeDevice?.deviceId == d.deviceId }?.reason ?? "dead"
                events.emit(.deviceRemoved(d, channel: spec.name, reason: reason))
            }
        } catch {
            logger.error("cannot record delivery results", ["channel": spec.name, "error": "\(error)"])
            return error
        }
        if events.hasSubscribers {
            let byId = Dictionary(uniqueKeysWithValues: chunk.map { ($0.id, $0) })
            for a in attempts {
                guard let r = byId[a.deliveryId] else { continue }
                events.emit(.delivery(r.applying(a, at: now)))
            }
        }
        for r in suppressed { events.emit(.delivery(r)) }
        return nil
    }

    func attemptRecord(
        for result: DeliveryResult, record: DeliveryRecord, device: Device?, spec: ChannelSpec, expiresAt: Date?,
        now: Date
    ) -> AttemptRecord {
        let attempt = record.attempts + 1
        switch result.outcome {
        case .delivered:
            return AttemptRecord(
                deliveryId: record.id, attempt: attempt, state: .delivered, status: result.status,
                reason: result.reason, providerMessageId: result.providerMessageId, details: result.details)
        case .failed, .suppressed:
            return AttemptRecord(
                deliveryId: record.id, attempt: attempt, state: result.outcome == .failed ? .failed : .suppressed,
                status: result.status, reason: result.reason, details: result.details)
        case .dead:
            var remove: (namespace: String, deviceId: String, platform: String, address: String?)?
            if let device { remove = (device.namespace, device.deviceId, device.platform, device.address) }
            return AttemptRecord(
                deliveryId: record.id, attempt: attempt, state: .dead, status: result.status, reason: result.reason,
                details: result.details, removeDevice: remove)
        case .retry:
            let decision = spec.retry.decide(
                attempt: attempt, now: now, retryAfter: result.retryAfter, expiresAt: expiresAt,
                jitter: random.unitInterval())
            switch decision {
            case .retry(let at):
                return AttemptRecord(
                    deliveryId: record.id, attempt: attempt, state: .retry, nextAttemptAt: at, status: result.status,
                    reason: result.reason, details: result.details)
            case .giveUp(let why):
                let reason = [why, result.reason].compactMap { $0 }.joined(separator: ": ")
                return AttemptRecord(
                    deliveryId: record.id, attempt: attempt, state: .failed, status: result.status, reason: reason,
                    details: result.details)
            }
        }
    }

    /// Records a final outcome for every delivery `source` hands out (page by page); returns the
    /// store failure that stopped it.
    private func recordFinal(
        _ source: ChunkSource, state: DeliveryState, reason: String, notification: HeraldNotification
    ) -> (any Error)? {
        do {
            while let records = try source.next() {
                let attempts = records.map {
                    AttemptRecord(deliveryId: $0.id, attempt: $0.attempts, state: state, reason: reason)
                }
                _ = try store.record(attempts, now: clock.now())
                source.finished(records)
                for var r in records {
                    r.state = state
                    r.reason = reason
                    events.emit(.delivery(r))
                }
            }
            return nil
        } catch {
            logger.error("cannot record delivery results", ["error": "\(error)"])
            return error
        }
    }

    static func key(_ deviceId: String?, _ platform: String?) -> String {
        (deviceId ?? "") + "\u{0}" + (platform ?? "")
    }

    /// The longest outer bound of a `deliver` call (a year), so that the bound's arithmetic cannot
    /// overflow whatever the configured timeout.
    static let longestBound: Duration = .seconds(365 * 86_400)

    /// The outer bound of a `deliver` call of `targets` targets whose requests each get
    /// `requestTimeout`: enough for one request per target in rounds of 16 concurrent requests, plus
    /// ``margin(requestTimeout:)``. A channel with a smaller window can run past it on a slow
    /// receiver; it is then cancelled and its finished results are kept.
    static func callBound(requestTimeout: Duration, targets: Int) -> Duration {
        let rounds = max(1, (max(0, targets) + 15) / 16)
        return min(requestTimeout * rounds + margin(requestTimeout: requestTimeout), longestBound)
    }

    /// What a call gets beyond its requests' timeouts, and the grace it gets once cancelled: the
    /// timeout itself, at least 1 s (so a request's own timeout, reported by a busy HTTP loop, comes
    /// before the call's bound even for short timeouts) and at most 5 s.
    static func margin(requestTimeout: Duration) -> Duration {
        min(max(requestTimeout, .seconds(1)), .seconds(5))
    }

    /// A duration from seconds, clamped to `0...longestBound` (a non-finite value gives 0).
    static func duration(seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0 else { return .zero }
        let limit = longestBound.timeInterval
        return seconds >= limit ? longestBound : .milliseconds(Int64((seconds * 1000).rounded(.down)))
    }

    /// Runs a channel call with `requestTimeout` as the limit of each HTTP request it makes
    /// (``RequestTimeoutScope``). When the call runs past `bound` it is cancelled and given `grace`
    /// more to return what it has; `timedOut` is then true. A call that does not return even then is
    /// abandoned and yields no results.
    static func deliver(
        requestTimeout: Duration, bound: Duration, grace: Duration,
        _ operation: @escaping @Sendable () async -> [DeliveryResult]
    ) async -> (results: [DeliveryResult], timedOut: Bool) {
        let answers = Mailbox<[DeliveryResult]?>()
        let work = RequestTimeoutScope.$limit.withValue(requestTimeout) {
            Task { answers.put(await operation()) }
        }
        let timer = DeadlineWatch.shared.add(after: bound) { answers.put(nil) }
        return await withTaskCancellationHandler {
            let first = await answers.take()
            DeadlineWatch.shared.remove(timer)
            if let first, !Task.isCancelled { return (first, false) }
            work.cancel()
            let graceTimer = Task {
                do {
                    try await Task.sleep(for: grace)
                    answers.put(nil)
                } catch {}
            }
            var late = first
            if late == nil { late = await answers.take() }
            graceTimer.cancel()
            return (late ?? [], true)
        } onCancel: {
            work.cancel()
        }
    }

    /// Runs `operation`, returning nil when it does not finish within `timeout` (it is then cancelled).
    static func withTimeout<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async -> T) async
        -> T?
    {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await operation() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

/// The first store failure of one ``Executor/attempt(_:notification:graph:deadline:)``, shared by its chunks.
final class RecordFailure: Sendable {
    private let first = Locked<(any Error)?>(nil)

    /// The failure, if one was set.
    var error: (any Error)? { first.withLock { $0 } }

    /// Keeps `error` unless a failure was already set.
    func set(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }
}
