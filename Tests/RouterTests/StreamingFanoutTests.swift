import ChannelAPI
import Foundation
import HeraldSQLite
import HeraldSync
import RouterTesting
import Testing

@testable import Router

/// Issue 19: the send path streams. A fan-out larger than the executor's page (`chunkSize ×
/// chunksInFlight` = 500) is claimed page by page (never all leased at once), delivered and recorded
/// once each; a store failure in the middle stops it with nothing lost; the report is complete.
@Suite struct StreamingFanoutTests {
    static let page = 500

    /// A router over one recording channel `fcm` (platform phone) on `store`, with `count` phones.
    static func router(store: any HeraldStore, path: String, devices count: Int, clock: ManualClock = ManualClock())
        async throws -> (Router, RecordingChannel)
    {
        let fcm = RecordingChannel()
        let registry = try ChannelRegistry([fcm.factory(type: "rec-fcm", platforms: ["phone"])])
        let config = try ConfigLoader.parse(
            """
            version: 1
            store: { path: \(path) }
            channels:
              fcm: { type: rec-fcm, retry: { attempts: 5, initial: 10s, max: 1m } }
            routes:
              default:
                - deliver: [fcm]
            """, registry: registry)
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(clock: clock, random: FixedRandom(), logSink: RecordingLogSink(), store: store))
        _ = try store.upsertDevices(
            (0..<count).map {
                Device(deviceId: String(format: "p%05d", $0), platform: "phone", fields: ["token": .string("t\($0)")])
            }, now: clock.now())
        return (router, fcm)
    }

    /// The rows not delivered, counted by state, lease owner and lease expiry (seconds from `now`):
    /// what a failed drain shows about the rows it could not take.
    static func leftRows(_ store: SQLiteStore, now: Date) throws -> [String] {
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        return try store.db.query(
            """
            SELECT state, COALESCE(lease_owner, '-') AS owner, COALESCE((lease_until - \(nowMs)) / 1000, 0) AS s,
              COUNT(*) AS n FROM deliveries WHERE state != 'delivered' GROUP BY 1, 2, 3
            """
        ).map { "\($0.string("state") ?? "") \($0.string("owner") ?? "") \($0.int("s") ?? 0)s: \($0.int("n") ?? 0)" }
    }

    /// Rows of the outbox still leased (claimed, not yet recorded).
    static func leased(_ store: SQLiteStore) throws -> Int {
        Int(
            try store.db.queryOne("SELECT COUNT(*) AS n FROM deliveries WHERE lease_owner IS NOT NULL")?.int("n") ?? -1)
    }

    /// `herald serve` runs `send` and the outbox worker in one process. A send's rows are born leased
    /// to the sender, so the worker's batch claim takes none of them: each row is sent once, by the
    /// send, which reports every delivery attempted. (When both shared one lease owner every row the
    /// worker took was sent twice; with separate owners and no lease at birth the worker took part of
    /// the fan-out, and a send's report could show rows it never tried: CI caught that on a one-device
    /// Pulse send through `herald serve`.)
    @Test func aWorkerInTheSameProcessAndASendNeverBothSendARow() async throws {
        let path = Harness.tempPath()
        let store = try SQLiteStore(path: path)
        let (router, fcm) = try await Self.router(store: store, path: path, devices: 2_345)
        fcm.delay(.milliseconds(50))
        let send = Task { try await router.sendSummarized(HeraldNotification(id: "big", title: "t")) }
        while fcm.requests.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
        let drained = try await router.drain()
        _ = try await send.value
        let ids = fcm.targets.map(\.deliveryId)
        #expect(drained.attempted == 0, "the worker took \(drained.attempted) rows of the send's fan-out")
        #expect(ids.count == 2_345, "sent \(ids.count) times for 2,345 rows")
        #expect(Set(ids).count == 2_345)
        let stored = try store.deliveries(notificationId: "big")
        #expect(stored.allSatisfy { $0.state == .delivered && $0.attempts == 1 })
    }

    @Test func aFanOutLargerThanAPageIsClaimedInPagesAndRecordedOnceEach() async throws {
        let path = Harness.tempPath()
        let store = try SQLiteStore(path: path)
        let (router, fcm) = try await Self.router(store: store, path: path, devices: 2_345)
        // The rows are born leased to the sender (no worker takes them first) and stay leased until
        // recorded; they are claimed, read and sent a page at a time (calls of at most 125 below;
        // the paged claim itself: StoreContractTests).
        let mostLeased = Locked(0)
        fcm.answer { target, _ in
            let n = (try? Self.leased(store)) ?? -1
            mostLeased.withLock { $0 = max($0, n) }
            return .delivered(target)
        }
        let n = HeraldNotification(id: "big", title: "t")
        let summary = try await router.sendSummarized(n)
        #expect(mostLeased.withLock { $0 } == 2_345, "leased while sending: \(mostLeased.withLock { $0 })")
        #expect(try Self.leased(store) == 0)

        // Every device once, in calls of at most 125 targets; every row recorded once.
        let ids = fcm.targets.map(\.deliveryId)
        #expect(ids.count == 2_345)
        #expect(Set(ids).count == 2_345)
        #expect(fcm.requests.allSatisfy { $0.targets.count <= 125 })
        #expect(summary == SendSummary(id: "big", namespace: "default", counts: [.delivered: 2_345]))
        let stored = try store.deliveries(notificationId: "big")
        #expect(stored.count == 2_345)
        #expect(stored.allSatisfy { $0.state == .delivered && $0.attempts == 1 })
        #expect(Set(stored.map(\.id)) == Set(ids))

        // The streamed report is the full report, in its order (pages of 1,000 and a partial one).
        var streamed: [DeliveryRecord] = []
        try router.forEachDelivery(of: "big") { streamed.append($0) }
        #expect(streamed.map(\.id) == stored.map(\.id))
        #expect(streamed.map(\.deviceId) == (0..<2_345).map { String(format: "p%05d", $0) })
        let report = try await router.send(n)
        #expect(report.replayed)
        #expect(report.deliveries.map(\.id) == stored.map(\.id))
        await router.shutdown()
    }

    @Test func aStoreFailureMidFanOutStopsLosesNothingAndResumes() async throws {
        let path = Harness.tempPath()
        let store = try RecordRefusingStore(path: path)
        let clock = ManualClock()
        let (router, fcm) = try await Self.router(store: store, path: path, devices: 3_000, clock: clock)
        // Two chunks are recorded, then the disk "fills".
        store.refuseRecords(after: 2)
        await #expect(throws: StoreError.self) { try await router.send(HeraldNotification(id: "big", title: "t")) }

        let rows = try store.deliveries(notificationId: "big")
        #expect(rows.count == 3_000)
        #expect(rows.filter { $0.state == .delivered }.count == 250)
        #expect(rows.filter { $0.state == .pending }.count == 2_750, "nothing failed or lost")
        // Sent but unrecorded: at most the chunks in flight (chunkSize × chunksInFlight).
        let sent = Set(fcm.targets.map(\.deliveryId))
        #expect(sent.count - 250 <= Self.page)
        // The rows left stay leased to the sender (they were born so) until the lease runs out:
        // another process takes them over then, as after a crash.
        let leased = try Self.leased(store.base)
        #expect(leased == 2_750, "leased: \(leased)")

        // The store is back; once the leases run out the worker delivers the rest, each row once recorded.
        store.acceptRecords()
        clock.advance(by: .seconds(61))
        let summary = try await router.drain(untilEmpty: true, timeout: .seconds(60))
        let left = try Self.leftRows(store.base, now: clock.now())
        #expect(summary.remaining == 0, "left: \(left)")
        let after = try store.deliveries(notificationId: "big")
        #expect(
            after.allSatisfy { $0.state == .delivered },
            "\(Dictionary(grouping: after, by: \.state).mapValues(\.count))")
        #expect(Set(fcm.targets.map(\.deliveryId)).count == 3_000)
        // Only the unrecorded rows of the chunks in flight were sent twice.
        #expect(fcm.targets.count - 3_000 <= Self.page)
        await router.shutdown()
    }

    /// A renewal under way when the body ends finishes before `holdingLeases` returns, and none
    /// starts after: one that landed later re-leased rows the caller had given back (or, after a
    /// failed send, rows a test's clock had just let expire) for a whole lease. CI saw that: the
    /// test above then drained for its whole timeout with 750 rows held.
    @Test func holdingLeasesReturnsOnlyAfterItsLastRenewal() async throws {
        let path = Harness.tempPath()
        let store = try RecordRefusingStore(path: path)
        let (router, _) = try await Self.router(store: store, path: path, devices: 1)
        var executor = router.executor(owner: "renewal-test")
        executor.leaseDuration = .milliseconds(30)  // a renewal every 10 ms of wall time
        store.renewalDelay.withLock { $0 = 0.05 }
        try await executor.holdingLeases(["d1"]) {
            // The body ends while a renewal is under way.
            while !store.renewalLog.withLock({ $0.contains("renew started") }) {
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        store.renewalLog.withLock { $0.append("returned") }
        try await Task.sleep(for: .milliseconds(100))
        let log = store.renewalLog.withLock { $0 }
        #expect(log.last == "returned", "\(log)")
        #expect(log.filter { $0 == "renew started" }.count == log.filter { $0 == "renew ended" }.count, "\(log)")
        await router.shutdown()
    }

    @Test func theExecutorDoesNotReReadTheNotificationPerResult() async throws {
        let path = Harness.tempPath()
        let store = try RecordRefusingStore(path: path)
        let (router, fcm) = try await Self.router(store: store, path: path, devices: 300)
        fcm.answer { target, _ in .retry(target, status: 503, reason: "busy") }
        let reads = store.notificationReadCount
        let summary = try await router.sendSummarized(HeraldNotification(id: "ttl", title: "t", ttl: 3600))
        #expect(summary.counts == [.retry: 300])
        // The idempotency check reads it once; the executor uses what the router holds (it used to read
        // it again to start, and once per retry result for the TTL).
        #expect(store.notificationReadCount - reads <= 1, "reads: \(store.notificationReadCount - reads)")
        await router.shutdown()
    }

    /// The store expands the planner's outline into exactly the rows of the full plan: steps not
    /// applying make none, a sink one, a suppressed step `suppressed` rows, other namespaces none.
    @Test func persistedRowsAreThePlansRows() async throws {
        let h = try await Harness.make(
            routes: """
                routes:
                  default:
                    - deliver: [fcm, webpush, sink]
                    - deliver: [apns]
                      when: { type: [never] }
                    - deliver: [telegram, fcm]
                      unless-registered: [webpush]
                """)
        let phones = (0..<600).map {
            Device(
                deviceId: String(format: "d%04d", $0), platform: $0 % 2 == 0 ? "phone" : "wear",
                fields: ["token": .string("t\($0)")])
        }
        _ = try h.router.store.upsertDevices(phones, now: h.clock.now())
        try await h.register("web", "laptop")
        try await h.register("telegram", "chat")
        try await h.register("phone", "elsewhere", namespace: "other")
        let n = HeraldNotification(id: "outline", title: "t")
        let plan = try h.router.enqueue(n)
        var expected: [(Int, Int, String, String?, DeliveryState)] = []
        for step in plan.steps where step.applies {
            for (position, channel) in step.channels.enumerated() where channel.enabled {
                let state: DeliveryState = step.suppression == nil ? .pending : .suppressed
                if channel.isSink {
                    expected.append((step.index, position, channel.name, nil, state))
                } else {
                    for d in channel.devices {
                        expected.append((step.index, position, channel.name, d.deviceId, state))
                    }
                }
            }
        }
        let rows = try h.router.store.deliveries(notificationId: "outline")
        #expect(rows.count == expected.count)
        #expect(rows.count == 1_203)  // fcm 600 + webpush 1 + sink 1, then telegram 1 + fcm 600 suppressed
        for (row, e) in zip(rows, expected) {
            let same = row.step == e.0 && row.position == e.1 && row.channel == e.2
            #expect(same && row.deviceId == e.3 && row.state == e.4, "\(row) vs \(e)")
        }
        #expect(rows.filter { $0.state == .suppressed }.allSatisfy { $0.reason == "unless-registered: webpush" })
        let logged = try h.router.store.eventLog(after: 0, namespaces: ["default"], limit: 10_000)
        #expect(logged.first { $0.kind == "notification" }?.data["planned"] == .number(Double(rows.count)))
        #expect(logged.filter { $0.kind == "delivery" }.count == 601)
        await h.router.shutdown()
    }

    /// SQLite forms a pending group's ids itself (`INSERT … SELECT` with `printf`): they are
    /// well-formed version-7 UUIDs of the insert's millisecond, distinct, rows in device order, each
    /// the member of one series numbered by its device's rowid, as
    /// ``UUIDGenerator/seriesMember(prefix:base:_:)`` makes them.
    @Test func idsNumberedBySQLiteAreOneWellFormedSeries() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-series-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SQLiteStore(path: dir.appendingPathComponent("h.db").path)
        let (router, _) = try await Self.router(store: store, path: dir.path + "/h.db", devices: 1_234)
        _ = try router.enqueue(HeraldNotification(id: "series", title: "t"))
        var rows: [DeliveryRecord] = []
        try store.forEachDelivery(notificationId: "series") { rows.append($0) }
        #expect(rows.count == 1_234)
        #expect(rows.map { $0.deviceId ?? "" } == (0..<1_234).map { String(format: "p%05d", $0) })
        let first = try #require(rows.first?.id)
        let millis = ManualClock().now().millisecondsSince1970
        #expect(first.prefix(13) == UUIDGenerator.makeTimeOrdered(1, at: millis, random: SystemRandom())[0].prefix(13))
        // Member k of the series is numbered by the device's rowid.
        var rowids: [String: Int64] = [:]
        for row in try store.db.query("SELECT rowid AS r, device_id FROM devices") {
            if let id = row.string("device_id"), let r = row.int("r") { rowids[id] = r }
        }
        let prefix = String(first.prefix(24))
        let firstRowid = try #require(rowids[rows[0].deviceId ?? ""])
        let base = try #require(Int64(first.suffix(12), radix: 16)) - firstRowid
        for row in rows {
            let k = try #require(rowids[row.deviceId ?? ""])
            #expect(row.id == UUIDGenerator.seriesMember(prefix: prefix, base: base, k))
            #expect(UUID(uuidString: row.id) != nil)
            #expect(Array(row.id)[14] == "7" && "89ab".contains(Array(row.id)[19]), "\(row.id)")
        }
        #expect(Set(rows.map(\.id)).count == rows.count)
        await router.shutdown()
    }
}

/// SQLite records a chunk's results with set-based statements: the rows, attempts, event-log entries
/// and device removals are those of recording each result on its own.
@Suite struct BatchedRecordTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func store(_ path: String) throws -> SQLiteStore {
        let store = try SQLiteStore(path: path)
        for i in 0..<5 {
            _ = try store.upsertDevice(
                Device(deviceId: "d\(i)", platform: "phone", fields: ["token": .string("T\(i)")], address: "T\(i)"),
                now: t0)
        }
        let n = HeraldNotification(id: "n", title: "t")
        let rows = (0..<6).map { i in
            DeliveryRecord(
                id: "n-\(i)", notificationId: "n", step: 0, position: 0, channel: i == 5 ? "sink" : "fcm",
                deviceId: i == 5 ? nil : "d\(i)", platform: i == 5 ? nil : "phone", state: .pending, updatedAt: t0)
        }
        try store.insertNotification(
            n, steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)], deliveries: rows, now: t0)
        return store
    }

    static let attempts = [
        AttemptRecord(
            deliveryId: "n-0", attempt: 1, state: .delivered, status: 200, providerMessageId: "m-0",
            details: ["apns-id": "x"]),
        AttemptRecord(
            deliveryId: "n-1", attempt: 1, state: .retry, nextAttemptAt: t0.addingTimeInterval(30), status: 503,
            reason: "busy \"quoted\" ✓"),
        AttemptRecord(deliveryId: "n-2", attempt: 1, state: .failed, status: 400, reason: "BadDeviceToken"),
        AttemptRecord(
            deliveryId: "n-3", attempt: 1, state: .dead, status: 410, reason: "Unregistered",
            removeDevice: ("default", "d3", "phone", "T3")),
        AttemptRecord(deliveryId: "n-5", attempt: 1, state: .suppressed, reason: "quiet"),
    ]

    @Test func aBatchRecordsWhatOneByOneRecords() throws {
        let batched = try Self.store(Harness.tempPath())
        let single = try Self.store(Harness.tempPath())
        let now = Self.t0.addingTimeInterval(1)
        let removedBatched = try batched.record(Self.attempts, now: now)
        var removedSingle: [Device] = []
        for a in Self.attempts { removedSingle += try single.record([a], now: now) }
        #expect(removedBatched.map(\.deviceId) == ["d3"])
        #expect(removedBatched == removedSingle)

        func dump(_ s: SQLiteStore) throws -> [String] {
            let rows = try s.db.query("SELECT * FROM deliveries ORDER BY id").map { "\($0.columns) \($0.values)" }
            let tried = try s.db.query("SELECT * FROM attempts ORDER BY delivery_id").map {
                "\($0.columns) \($0.values)"
            }
            let log = try s.db.query(
                "SELECT namespace, kind, notification_id, data, created_at FROM event_log ORDER BY sequence"
            )
            .map { "\($0.columns) \($0.values)" }
            let devices = try s.devices(namespace: nil).map(\.deviceId)
            return rows + tried + log + devices
        }
        let a = try dump(batched)
        #expect(a == (try dump(single)))
        // Ordered by step, position, device: the sink row (no device) first.
        let states = try batched.deliveries(notificationId: "n").map(\.state)
        #expect(states == [.suppressed, .delivered, .retry, .failed, .dead, .pending])
        #expect(try batched.deliveries(notificationId: "n").first { $0.id == "n-0" }?.providerMessageId == "m-0")
        batched.close()
        single.close()
    }
}
