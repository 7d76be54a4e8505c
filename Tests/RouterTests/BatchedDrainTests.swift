import ChannelAPI
import Foundation
import HeraldSync
import RouterTesting
import Testing

@testable import Router

/// Issue 18: the drain claims pending deliveries of many notifications in one statement and
/// records each batch in one transaction, on SQLite and PostgreSQL, without giving up step order,
/// `unless-delivered`, exactly-once across concurrent workers, or anything after a failed record.
@Suite struct BatchedDrainTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// A router over one recording sink (`sink`) and one recording device channel (`fcm`) on
    /// `store`, with `routes`.
    static func router(store: any HeraldStore, routes: String, clock: ManualClock = ManualClock()) async throws
        -> (Router, sink: RecordingChannel, fcm: RecordingChannel)
    {
        let sink = RecordingChannel()
        let fcm = RecordingChannel()
        let registry = try ChannelRegistry([
            sink.factory(type: "rec-sink", platforms: []), fcm.factory(type: "rec-fcm", platforms: ["phone"]),
        ])
        let config = try ConfigLoader.parse(
            """
            version: 1
            store: { path: /nonexistent/unused.db }
            channels:
              sink: { type: rec-sink }
              fcm: { type: rec-fcm, retry: { attempts: 3, initial: 10s, max: 1m } }
            \(routes)
            """, registry: registry)
        var options = RouterOptions(clock: clock, random: FixedRandom(), logSink: RecordingLogSink(), store: store)
        // A pass never runs out of time here, even on a loaded machine: batches are counted exactly.
        options.passBudget = .seconds(3600)
        let router = try await Router(config: config, registry: registry, options: options)
        return (router, sink, fcm)
    }

    static let sinkRoute = """
        routes:
          default:
            - deliver: [sink]
        """

    /// Enqueues `count` notifications of one sink delivery each (pending, as `serve` leaves them).
    static func enqueue(_ router: Router, count: Int, prefix: String = "n") throws {
        for i in 0..<count { try router.enqueue(HeraldNotification(id: "\(prefix)\(i)", title: "t")) }
    }

    /// 300 pending notifications: the drain claims and records them in batches of 125 (3 claims
    /// with work and 3 recording calls), not once per notification, and delivers each once.
    @Test(arguments: StoreKind.allCases) func pendingNotificationsAreClaimedAndRecordedInBatches(store kind: StoreKind)
        async throws
    {
        let store = CountingStore(try kind.open())
        let (router, sink, _) = try await Self.router(store: store, routes: Self.sinkRoute)
        try Self.enqueue(router, count: 300)
        let summary = try await router.drain()
        #expect(summary.attempted == 300)
        #expect(summary.remaining == 0)
        let ids = sink.targets.map(\.deliveryId)
        #expect(ids.count == 300 && Set(ids).count == 300, "every delivery once")
        #expect(store.count("record") == 3, "one recording call per batch of 125: \(store.counts)")
        #expect(store.count("claimPendingBatch") == 4, "three batches and the empty claim that ends the drain")
        #expect(store.count("claimPending") == 0, "no per-notification claims")
        // The pass ends on the outstanding counts, not on a count of every delivery ever stored.
        #expect(store.count("outstandingCounts") == 1)
        #expect(store.count("deliveryCounts") == 0)
        #expect(try store.deliveryCounts() == [.delivered: 300])
        #expect(try store.leaseOwners().isEmpty)
        await router.shutdown()
    }

    /// The claim takes only the current step: a later step's rows are not claimed while an earlier
    /// step of the same notification still has pending rows, and rows another owner holds are skipped.
    @Test(arguments: StoreKind.allCases) func theBatchClaimTakesOnlyTheCurrentStep(store kind: StoreKind) throws {
        let store = try kind.open()
        let steps = [
            StepRule(mode: .all, unlessDelivered: nil, timeout: nil),
            StepRule(mode: .all, unlessDelivered: nil, timeout: nil),
        ]
        let n = HeraldNotification(id: "two", title: "t")
        let rows = [0, 1].map { step in
            DeliveryRecord(
                id: "two-\(step)", notificationId: n.id, step: step, position: 0, channel: "sink", deviceId: nil,
                platform: nil, state: .pending, updatedAt: Self.t0)
        }
        try store.insertNotification(n, steps: steps, deliveries: rows, now: Self.t0)
        let until = Self.t0.addingTimeInterval(60)
        let first = try store.claimPendingBatch(owner: "A", until: until, now: Self.t0, limit: 125)
        #expect(first.deliveries.map(\.id) == ["two-0"])
        #expect(first.notifications["two"]?.steps.count == 2)
        // Step 0 is held by A: nothing is claimable, by B or by A again.
        #expect(try store.claimPendingBatch(owner: "B", until: until, now: Self.t0, limit: 125).deliveries.isEmpty)
        #expect(try store.claimPendingBatch(owner: "A", until: until, now: Self.t0, limit: 125).deliveries.isEmpty)
        _ = try store.record([AttemptRecord(deliveryId: "two-0", attempt: 1, state: .retry)], now: Self.t0)
        let second = try store.claimPendingBatch(owner: "B", until: until, now: Self.t0, limit: 125)
        #expect(second.deliveries.map(\.id) == ["two-1"])
        // An expired lease is taken over.
        let later = until.addingTimeInterval(1)
        let third = try store.claimPendingBatch(
            owner: "C", until: later.addingTimeInterval(60), now: later, limit: 125)
        #expect(third.deliveries.map(\.id) == ["two-1"])
    }

    /// Two steps, the second `unless-delivered`: the batched drain sends step 1 only to the
    /// notifications whose step 0 failed, and only after step 0 was attempted; the others are
    /// suppressed. A `mode: first` route goes through the per-notification path and holds too.
    @Test(arguments: StoreKind.allCases) func stepOrderAndUnlessDeliveredHold(store kind: StoreKind) async throws {
        let store = try kind.open()
        let routes = """
            routes:
              default:
                - deliver: [fcm]
                - deliver: [sink]
                  unless-delivered: any
            """
        let (router, sink, fcm) = try await Self.router(store: store, routes: routes)
        try await router.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "tok"]))
        // Odd notifications fail on fcm for good; even ones are delivered.
        fcm.answer { t, request in
            let odd = (Int(request.notification.id.dropFirst()) ?? 0) % 2 == 1
            return odd ? .failed(t, status: 400, reason: "bad") : .delivered(t)
        }
        let sinkSawFCMFirst = Locked(true)
        sink.answer { t, request in
            // The sink step of a notification runs only once its fcm step has been attempted.
            if !fcm.requests.contains(where: { $0.notification.id == request.notification.id }) {
                sinkSawFCMFirst.withLock { $0 = false }
            }
            return .delivered(t)
        }
        try Self.enqueue(router, count: 40)
        var passes = 0
        while try store.deliveryCounts()[.pending] ?? 0 > 0, passes < 5 {
            _ = try await router.drain()
            passes += 1
        }
        #expect(fcm.targets.count == 40)
        let sunk = Set(sink.requests.map(\.notification.id))
        #expect(sunk == Set((0..<40).filter { $0 % 2 == 1 }.map { "n\($0)" }))
        #expect(sink.targets.count == 20, "each sink delivery once")
        #expect(sinkSawFCMFirst.withLock { $0 })
        let counts = try store.deliveryCounts()
        #expect(counts == [.delivered: 40, .failed: 20, .suppressed: 20])
        let even = try store.deliveries(notificationId: "n2")
        #expect(even.map(\.state) == [.delivered, .suppressed])
        #expect(even.last?.reason == "unless-delivered: fcm")
        await router.shutdown()
    }

    /// A `mode: first` step (not the batch's simple case) is judged per notification, as `send` does.
    @Test(arguments: StoreKind.allCases) func aModeFirstStepFallsBackToThePerNotificationPath(store kind: StoreKind)
        async throws
    {
        let store = try kind.open()
        let routes = """
            routes:
              default:
                - deliver: [fcm, sink]
                  mode: first
            """
        let (router, sink, fcm) = try await Self.router(store: store, routes: routes)
        try await router.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "tok"]))
        try Self.enqueue(router, count: 10)
        _ = try await router.drain()
        #expect(fcm.targets.count == 10)
        #expect(sink.targets.isEmpty, "delivered by fcm first: the sink is suppressed")
        #expect(try store.deliveryCounts() == [.delivered: 10, .suppressed: 10])
        await router.shutdown()
    }

    /// Three routers (three lease owners) drain one store at once: every delivery is sent exactly
    /// once and recorded delivered.
    @Test(arguments: StoreKind.allCases) func concurrentRoutersDeliverEveryDeliveryOnce(store kind: StoreKind)
        async throws
    {
        let location = try kind.newLocation()
        let stores = try (0..<3).map { _ in try kind.open(location) }
        var routers: [(Router, sink: RecordingChannel, fcm: RecordingChannel)] = []
        for s in stores { routers.append(try await Self.router(store: s, routes: Self.sinkRoute)) }
        try Self.enqueue(routers[0].0, count: 1_000)
        await withThrowingTaskGroup(of: Void.self) { group in
            for (router, _, _) in routers {
                group.addTask {
                    var passes = 0
                    while try stores[0].deliveryCounts()[.pending] ?? 0 > 0, passes < 20 {
                        _ = try await router.drain()
                        try await Task.sleep(for: .milliseconds(5))
                        passes += 1
                    }
                }
            }
        }
        let ids = routers.flatMap { $0.sink.targets.map(\.deliveryId) }
        #expect(ids.count == 1_000, "sent once each: \(ids.count) sends")
        #expect(Set(ids).count == 1_000)
        #expect(try stores[0].deliveryCounts() == [.delivered: 1_000])
        for (router, _, _) in routers { await router.shutdown() }
    }

    /// The store fails to record a batch: the drain throws after at most one further batch (a
    /// batch's results are recorded while the next one is delivered); nothing is lost: once the
    /// store works again and the leases have expired, the unrecorded deliveries go out again with
    /// the same delivery ids and everything ends delivered.
    @Test(arguments: StoreKind.allCases) func aFailedRecordMidBatchLosesNothing(store kind: StoreKind) async throws {
        let store = CountingStore(try kind.open())
        let clock = ManualClock()
        let (router, sink, _) = try await Self.router(store: store, routes: Self.sinkRoute, clock: clock)
        try Self.enqueue(router, count: 300)
        store.refuseRecords(true)
        await #expect(throws: StoreError.self) { try await router.drain() }
        let firstSends = sink.targets.map(\.deliveryId)
        #expect(
            firstSends.count == 250,
            "the batch whose record failed and the one delivered meanwhile; no later batch was sent")
        store.refuseRecords(false)
        // The two unrecorded batches are still leased; everything else is claimable at once.
        _ = try await router.drain()
        #expect(try store.deliveryCounts() == [.delivered: 50, .pending: 250])
        clock.advance(by: .seconds(61))
        _ = try await router.drain()
        #expect(try store.deliveryCounts() == [.delivered: 300])
        let all = sink.targets.map(\.deliveryId)
        #expect(Set(all).count == 300, "nothing lost")
        #expect(all.count == 550, "the 250 unrecorded ones once more, with the same ids")
        #expect(Set(all.dropFirst(250)).isSuperset(of: firstSends))
        await router.shutdown()
    }

    /// `drain --until-empty` while another worker holds the only pending row: it looks again after
    /// 5 ms, then 10, 20, … up to 200 ms, so a run that waits for a worker finishing its last batch
    /// ends milliseconds after it rather than up to 200 ms later.
    @Test func waitsForRowsAnotherWorkerHoldsWithAGrowingInterval() async throws {
        let store = try SQLiteStore(path: Harness.tempPath())
        let clock = ManualClock(start: Self.t0)
        let (router, sink, _) = try await Self.router(store: store, routes: Self.sinkRoute, clock: clock)
        try Self.enqueue(router, count: 1)
        let held = try store.claimPendingBatch(
            owner: "another-worker", until: Self.t0.addingTimeInterval(3600), now: Self.t0, limit: 125)
        #expect(held.deliveries.count == 1)
        let summary = try await router.drain(untilEmpty: true, timeout: .seconds(1))
        #expect(summary.remaining == 1 && summary.attempted == 0)
        #expect(sink.targets.isEmpty)
        let waits = clock.sleeps.map(\.milliseconds)
        #expect(Array(waits.prefix(7)) == [5, 10, 20, 40, 80, 160, 200])
        #expect(waits.dropFirst(6).allSatisfy { $0 <= 200 })
        await router.shutdown()
    }
}

/// Any store, counting calls by name, whose `record` can be made to fail (a store failing between
/// claim and record). Everything else goes to the wrapped store unchanged.
final class CountingStore: HeraldStore {
    let base: any HeraldStore
    private let calls = Locked<[String: Int]>([:])
    private let refusing = Locked(false)

    init(_ base: any HeraldStore) { self.base = base }

    var counts: [String: Int] { calls.withLock { $0 } }
    func count(_ name: String) -> Int { calls.withLock { $0[name] ?? 0 } }
    func refuseRecords(_ on: Bool) { refusing.withLock { $0 = on } }
    private func tick(_ name: String) { calls.withLock { $0[name, default: 0] += 1 } }

    func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device] {
        tick("record")
        if refusing.withLock({ $0 }) {
            throw StoreError.writeFailed(operation: "record delivery results", detail: "disk full (test)")
        }
        return try base.record(attempts, now: now)
    }
    func claimPendingBatch(owner: String, until: Date, now: Date, limit: Int) throws -> PendingBatch {
        tick("claimPendingBatch")
        return try base.claimPendingBatch(owner: owner, until: until, now: now, limit: limit)
    }
    func claimPending(notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date) throws
        -> [DeliveryRecord]
    {
        tick("claimPending")
        return try base.claimPending(
            notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now)
    }
    func upsertDevice(_ device: Device, now: Date) throws -> UpsertResult { try base.upsertDevice(device, now: now) }
    func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int {
        try base.removeDevice(namespace: namespace, deviceId: deviceId, platform: platform)
    }
    func removeDevice(namespace: String, address: String) throws -> Int {
        try base.removeDevice(namespace: namespace, address: address)
    }
    func devices(namespace: String?) throws -> [Device] { try base.devices(namespace: namespace) }
    func device(namespace: String, deviceId: String, platform: String) throws -> Device? {
        try base.device(namespace: namespace, deviceId: deviceId, platform: platform)
    }
    func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord], now: Date
    ) throws {
        try base.insertNotification(notification, steps: steps, deliveries: deliveries, now: now)
    }
    func notification(id: String) throws -> StoredNotification? { try base.notification(id: id) }
    func deliveries(notificationId: String) throws -> [DeliveryRecord] {
        try base.deliveries(notificationId: notificationId)
    }
    func claimDue(owner: String, until: Date, now: Date, limit: Int) throws -> [DeliveryRecord] {
        try base.claimDue(owner: owner, until: until, now: now, limit: limit)
    }
    func suppress(deliveryIds: [String], reason: String, now: Date) throws {
        try base.suppress(deliveryIds: deliveryIds, reason: reason, now: now)
    }
    func notificationsWithPendingDeliveries(now: Date) throws -> [String] {
        tick("notificationsWithPendingDeliveries")
        return try base.notificationsWithPendingDeliveries(now: now)
    }
    func releaseLeases(ownedBy owners: [String]) throws { try base.releaseLeases(ownedBy: owners) }
    func renewLeases(owner: String, deliveryIds: [String], until: Date) throws {
        try base.renewLeases(owner: owner, deliveryIds: deliveryIds, until: until)
    }
    func leaseOwners() throws -> [String] { try base.leaseOwners() }
    func nextDueTime() throws -> Date? { try base.nextDueTime() }
    func deliveryCounts() throws -> [DeliveryState: Int] {
        tick("deliveryCounts")
        return try base.deliveryCounts()
    }
    func outstandingCounts() throws -> (pending: Int, retry: Int) {
        tick("outstandingCounts")
        return try base.outstandingCounts()
    }
    func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent { try base.recordEvent(event) }
    func events(notificationId: String) throws -> [LifecycleEvent] { try base.events(notificationId: notificationId) }
    func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry] {
        try base.history(namespace: namespace, id: id, limit: limit)
    }
    func purge(before date: Date) throws -> Int { try base.purge(before: date) }
    func eventLog(after: Int64, namespaces: [String]?, limit: Int) throws -> [EventLogEntry] {
        try base.eventLog(after: after, namespaces: namespaces, limit: limit)
    }
    func lastEventSequence() throws -> Int64 { try base.lastEventSequence() }
    func channelState(_ channel: String) -> any ChannelStateStore { base.channelState(channel) }
    func addBadgeTag(namespace: String, tag: String, now: Date) throws {
        try base.addBadgeTag(namespace: namespace, tag: tag, now: now)
    }
    func pendingTagCount(namespace: String) throws -> Int { try base.pendingTagCount(namespace: namespace) }
    func clearBadge(namespace: String) throws { try base.clearBadge(namespace: namespace) }
    func touchCooldowns(namespace: String, tag: String, keys: [(key: String, window: Duration)], now: Date) throws
        -> Set<String>
    {
        try base.touchCooldowns(namespace: namespace, tag: tag, keys: keys, now: now)
    }
}

/// Session-5 leftovers of the PostgreSQL store: its own advice in `writeFailed`, and the wake-up
/// debounce on the injected clock.
@Suite struct PostgresStoreLeftoverTests {
    /// A failed outbox write on PostgreSQL names the database and PostgreSQL's checks, not SQLite's.
    @Test func aFailedWriteGivesPostgreSQLAdvice() throws {
        let store = try PostgresStore(url: try TestPostgres.start().createDatabase())
        defer { store.close() }
        // A NUL character cannot be stored by PostgreSQL: the record fails as a write, not a connection.
        let error = try #require(
            throws: StoreError.self,
            performing: {
                try store.record(
                    [AttemptRecord(deliveryId: "x", attempt: 1, state: .failed, reason: "a\u{0}b")], now: Date())
            })
        guard case .writeFailed(let operation, let detail) = error else {
            Issue.record("not writeFailed: \(error)")
            return
        }
        #expect(operation == "record delivery results")
        #expect(detail.contains(store.redactedURL))
        #expect(detail.contains("PostgreSQL server's log"))
        #expect(!error.description.contains("sqlite3"), "\(error.description)")
        #expect(!error.description.contains("integrity_check"))
    }

    /// The wake-up `NOTIFY` is debounced on the store's clock: a second notification at the same
    /// (manual) instant sends none even 150 ms of real time later; one 200 ms later on the manual
    /// clock sends one.
    @Test func theWakeUpDebounceFollowsTheInjectedClock() async throws {
        let url = try TestPostgres.start().createDatabase()
        let clock = ManualClock()
        let store = try PostgresStore(url: url, clock: clock)
        let listener = try PostgresStore(url: url)
        defer {
            store.close()
            listener.close()
        }
        _ = await listener.waitForWork(timeout: .milliseconds(10))  // LISTEN from now on
        func enqueue(_ id: String) throws {
            let n = HeraldNotification(id: id, title: "t")
            try store.insertNotification(
                n, steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)],
                deliveries: [
                    DeliveryRecord(
                        id: "\(id)-0", notificationId: id, step: 0, position: 0, channel: "sink", deviceId: nil,
                        platform: nil, state: .pending, updatedAt: clock.now())
                ], now: clock.now())
        }
        try enqueue("a")
        #expect(await listener.waitForWork(timeout: .seconds(5)), "the first one wakes the workers")
        // Real time passes, the store's clock does not: still the same instant for the debounce.
        try await Task.sleep(for: .milliseconds(150))
        try enqueue("b")
        #expect(!(await listener.waitForWork(timeout: .milliseconds(300))), "debounced at the same instant")
        clock.advance(by: .milliseconds(200))
        try enqueue("c")
        #expect(await listener.waitForWork(timeout: .seconds(5)), "200 ms later on the store's clock")
    }
}
