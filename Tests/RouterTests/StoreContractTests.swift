import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// What every ``HeraldStore`` must do, run against SQLite and PostgreSQL (one parameterised suite):
/// address moves, claims that never share a row between concurrent claimers, expired leases taken
/// over with the same ids, batched results, channel state updated atomically by concurrent
/// writers, the event log in commit order, cooldowns and purge.
@Suite struct StoreContractTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func rows(_ n: HeraldNotification, count: Int, channel: String = "sink", state: DeliveryState = .pending)
        -> [DeliveryRecord]
    {
        (0..<count).map { i in
            DeliveryRecord(
                id: "\(n.id)-\(i)", notificationId: n.id, step: 0, position: 0, channel: channel,
                deviceId: channel == "sink" ? nil : "d\(i)", platform: channel == "sink" ? nil : "phone", state: state,
                updatedAt: t0)
        }
    }

    static let all = [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)]

    @Test(arguments: StoreKind.allCases) func aTokenMovesToItsNewOwner(store kind: StoreKind) throws {
        let store = try kind.open()
        let a = Device(deviceId: "a", platform: "phone", fields: ["token": "T"], address: "T")
        #expect(try store.upsertDevice(a, now: Self.t0) == UpsertResult(created: true, moved: []))
        #expect(try store.upsertDevice(a, now: Self.t0) == UpsertResult(created: false, moved: []))
        let b = Device(deviceId: "b", platform: "phone", fields: ["token": "T"], address: "T")
        #expect(try store.upsertDevice(b, now: Self.t0) == UpsertResult(created: true, moved: ["default/a/phone"]))
        #expect(try store.devices(namespace: "default").map(\.deviceId) == ["b"])
        #expect(try store.removeDevice(namespace: "default", address: "T") == 1)
        #expect(try store.devices(namespace: nil).isEmpty)
    }

    @Test(arguments: StoreKind.allCases) func aNotificationIdIsStoredOnce(store kind: StoreKind) throws {
        let store = try kind.open()
        let n = HeraldNotification(id: "once", title: "t")
        try store.insertNotification(n, steps: Self.all, deliveries: Self.rows(n, count: 3), now: Self.t0)
        #expect(throws: StoreError.duplicateNotification("once")) {
            try store.insertNotification(n, steps: Self.all, deliveries: Self.rows(n, count: 3), now: Self.t0)
        }
        #expect(try store.deliveries(notificationId: "once").count == 3)
        #expect(try store.notification(id: "once")?.steps == Self.all)
    }

    /// Two stores on the same database (two processes) claiming the same rows at once: every row
    /// goes to exactly one of them.
    @Test(arguments: StoreKind.allCases) func concurrentClaimersNeverShareARow(store kind: StoreKind) async throws {
        let location = try kind.newLocation()
        let first = try kind.open(location)
        let second = try kind.open(location)
        var ids: [String] = []
        for k in 0..<20 {
            let n = HeraldNotification(id: "n\(k)", title: "t")
            let rows = Self.rows(n, count: 50, state: .retry).map { r -> DeliveryRecord in r }
            try first.insertNotification(n, steps: Self.all, deliveries: rows, now: Self.t0)
            ids += rows.map(\.id)
        }
        // Make them due retries.
        _ = try first.record(
            ids.map { AttemptRecord(deliveryId: $0, attempt: 1, state: .retry, nextAttemptAt: Self.t0) }, now: Self.t0)
        let until = Self.t0.addingTimeInterval(60)
        async let a: [String] = Task.detached {
            var got: [String] = []
            while true {
                let batch = try first.claimDue(owner: "A", until: until, now: Self.t0, limit: 37)
                if batch.isEmpty { return got }
                got += batch.map(\.id)
                // Completed as a worker does: the batch's results in one call.
                _ = try first.record(
                    batch.map { AttemptRecord(deliveryId: $0.id, attempt: 2, state: .delivered) }, now: Self.t0)
            }
        }.value
        async let b: [String] = Task.detached {
            var got: [String] = []
            while true {
                let batch = try second.claimDue(owner: "B", until: until, now: Self.t0, limit: 37)
                if batch.isEmpty { return got }
                got += batch.map(\.id)
                // Completed as a worker does: the batch's results in one call.
                _ = try second.record(
                    batch.map { AttemptRecord(deliveryId: $0.id, attempt: 2, state: .delivered) }, now: Self.t0)
            }
        }.value
        let (ga, gb) = try await (a, b)
        #expect(Set(ga).isDisjoint(with: Set(gb)))
        #expect(Set(ga + gb) == Set(ids))
        #expect(ga.count + gb.count == ids.count)
        #expect(try first.leaseOwners().isEmpty, "recording releases the leases")
        #expect(try first.deliveryCounts() == [.delivered: ids.count])
    }

    /// A claim whose holder died expires, and another worker takes the same rows (same ids) over.
    @Test(arguments: StoreKind.allCases) func anExpiredLeaseIsTakenOverWithTheSameIds(store kind: StoreKind) throws {
        let store = try kind.open()
        let n = HeraldNotification(id: "lease", title: "t")
        try store.insertNotification(n, steps: Self.all, deliveries: Self.rows(n, count: 5), now: Self.t0)
        let first = try store.claimPending(
            notificationId: "lease", step: 0, channel: "sink", owner: "dead", until: Self.t0.addingTimeInterval(60),
            now: Self.t0)
        #expect(first.count == 5)
        let early = try store.claimPending(
            notificationId: "lease", step: 0, channel: "sink", owner: "live", until: Self.t0.addingTimeInterval(120),
            now: Self.t0.addingTimeInterval(59))
        #expect(early.isEmpty)
        #expect(try store.notificationsWithPendingDeliveries(now: Self.t0.addingTimeInterval(59)).isEmpty)
        #expect(try store.notificationsWithPendingDeliveries(now: Self.t0.addingTimeInterval(61)) == ["lease"])
        let late = try store.claimPending(
            notificationId: "lease", step: 0, channel: "sink", owner: "live", until: Self.t0.addingTimeInterval(121),
            now: Self.t0.addingTimeInterval(61))
        #expect(Set(late.map(\.id)) == Set(first.map(\.id)))
        // Renewal only touches the holder's own rows.
        try store.renewLeases(owner: "dead", deliveryIds: late.map(\.id), until: Self.t0.addingTimeInterval(999))
        #expect(
            try store.claimPending(
                notificationId: "lease", step: 0, channel: "sink", owner: "x", until: Self.t0.addingTimeInterval(200),
                now: Self.t0.addingTimeInterval(122)
            ).count == 5)
    }

    /// Results of a batch are applied together: states, attempts, the retry index, the event log.
    /// The outstanding counts (what a worker pass reads) are the pending and retry rows, whatever
    /// else the history holds.
    @Test(arguments: StoreKind.allCases) func outstandingCountsArePendingAndRetryRows(store kind: StoreKind) throws {
        let store = try kind.open()
        #expect(try store.outstandingCounts() == (0, 0))
        let n = HeraldNotification(id: "out", namespace: "home", title: "t")
        try store.insertNotification(n, steps: Self.all, deliveries: Self.rows(n, count: 5), now: Self.t0)
        #expect(try store.outstandingCounts() == (5, 0))
        _ = try store.record(
            [
                AttemptRecord(deliveryId: "out-0", attempt: 1, state: .delivered, status: 200),
                AttemptRecord(
                    deliveryId: "out-1", attempt: 1, state: .retry, nextAttemptAt: Self.t0.addingTimeInterval(30)),
                AttemptRecord(deliveryId: "out-2", attempt: 1, state: .failed, status: 400),
            ], now: Self.t0)
        let counts = try store.deliveryCounts()
        #expect(try store.outstandingCounts() == (counts[.pending] ?? 0, counts[.retry] ?? 0))
        #expect(try store.outstandingCounts() == (2, 1))
    }

    @Test(arguments: StoreKind.allCases) func aBatchOfResultsIsRecorded(store kind: StoreKind) throws {
        let store = try kind.open()
        let n = HeraldNotification(id: "rec", namespace: "home", title: "t")
        try store.insertNotification(n, steps: Self.all, deliveries: Self.rows(n, count: 4), now: Self.t0)
        let due = Self.t0.addingTimeInterval(30)
        _ = try store.record(
            [
                AttemptRecord(deliveryId: "rec-0", attempt: 1, state: .delivered, status: 200, providerMessageId: "p0"),
                AttemptRecord(
                    deliveryId: "rec-1", attempt: 1, state: .retry, nextAttemptAt: due, status: 503, reason: "busy"),
                AttemptRecord(deliveryId: "rec-2", attempt: 1, state: .failed, status: 400, reason: "bad"),
            ], now: Self.t0)
        try store.suppress(deliveryIds: ["rec-3", "rec-0"], reason: "rule", now: Self.t0)
        let d = Dictionary(uniqueKeysWithValues: try store.deliveries(notificationId: "rec").map { ($0.id, $0) })
        #expect(d["rec-0"]?.state == .delivered)
        #expect(d["rec-0"]?.providerMessageId == "p0")
        #expect(d["rec-1"]?.state == .retry)
        #expect(d["rec-1"]?.nextAttemptAt == due)
        #expect(d["rec-1"]?.reason == "busy")
        #expect(d["rec-2"]?.state == .failed)
        #expect(d["rec-3"]?.state == .suppressed)
        #expect(try store.nextDueTime() == due)
        #expect(try store.deliveryCounts() == [.delivered: 1, .retry: 1, .failed: 1, .suppressed: 1])
        let log = try store.eventLog(after: 0, namespaces: ["home"], limit: 100)
        #expect(log.map(\.kind) == ["notification", "delivery", "delivery", "delivery", "delivery"])
        #expect(log.first?.data["planned"] == 4)
        let outcomes = log.dropFirst().compactMap { $0.data["outcome"]?.stringValue }
        #expect(outcomes.sorted() == ["delivered", "failed", "retry", "suppressed"])
        #expect(log.dropFirst().allSatisfy { $0.data["channel"] == "sink" && $0.data["deviceId"] == nil })
        let byOutcome = Dictionary(
            log.dropFirst().compactMap { e in e.data["outcome"]?.stringValue.map { ($0, e.data) } },
            uniquingKeysWith: { a, _ in a })
        #expect(byOutcome["retry"]?["reason"] == "busy")
        #expect(byOutcome["retry"]?["attempt"] == 1)
        #expect(byOutcome["failed"]?["reason"] == "bad")
        #expect(byOutcome["delivered"]?["reason"] == nil)
        // The attempts history holds one row per recorded result, with its outcome, status and reason.
        // Each row as text cells, read through the store's own row type's accessors.
        func cells(_ text: (String) -> String?, _ number: (String) -> Int64?) -> [String] {
            [
                text("delivery_id"), number("attempt").map { "\($0)" }, text("outcome"),
                number("status").map { "\($0)" },
                text("reason"),
            ].map { $0 ?? "-" }
        }
        let attempts: [[String]]
        if let pg = store as? PostgresStore {
            attempts = try pg.db.query(
                "SELECT delivery_id, attempt, outcome, status, reason FROM attempts ORDER BY delivery_id"
            ).map { cells($0.string, $0.int) }
        } else {
            attempts = try #require(store as? SQLiteStore).db.query(
                "SELECT delivery_id, attempt, outcome, status, reason FROM attempts ORDER BY delivery_id"
            ).map { cells($0.string, $0.int) }
        }
        #expect(
            attempts == [
                ["rec-0", "1", "delivered", "200", "-"], ["rec-1", "1", "retry", "503", "busy"],
                ["rec-2", "1", "failed", "400", "bad"],
            ])
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
        #expect(try store.eventLog(after: 0, namespaces: ["other"], limit: 100).isEmpty)
        #expect(try store.lastEventSequence() == log.last?.sequence)
        // Lifecycle events join the log; purge takes a notification's entries with it.
        let e = try store.recordEvent(
            LifecycleEvent(
                event: ChannelEvent(notificationId: "rec", kind: .action, actionId: "ok", deviceId: "d"), at: Self.t0))
        #expect(try store.events(notificationId: "rec") == [e])
        #expect(
            try store.eventLog(after: log.last?.sequence ?? 0, namespaces: nil, limit: 10).map(\.kind) == ["action"])
        #expect(try store.purge(before: Self.t0.addingTimeInterval(1)) == 0, "a retry is still due")
        _ = try store.record([AttemptRecord(deliveryId: "rec-1", attempt: 2, state: .delivered)], now: Self.t0)
        #expect(try store.purge(before: Self.t0.addingTimeInterval(1)) == 1)
        #expect(try store.eventLog(after: 0, namespaces: nil, limit: 100).isEmpty)
        #expect(try store.history(namespace: nil, id: nil, limit: 10).isEmpty)
    }

    /// Events in one batch (group commit, issue 35): one result each, in input order; an event of an
    /// unknown notification fails alone; the stored ones join the event log in order.
    @Test(arguments: StoreKind.allCases) func aBatchOfEventsFailsOnlyItsUnknownOnes(store kind: StoreKind) throws {
        let store = try kind.open()
        let n = HeraldNotification(id: "ev", title: "t")
        try store.insertNotification(n, steps: Self.all, deliveries: Self.rows(n, count: 1), now: Self.t0)
        let before = try store.lastEventSequence()
        let results = try store.recordEvents([
            LifecycleEvent(event: ChannelEvent(notificationId: "ev", kind: .received, deviceId: "a"), at: Self.t0),
            LifecycleEvent(event: ChannelEvent(notificationId: "nope", kind: .received, deviceId: "b"), at: Self.t0),
            LifecycleEvent(event: ChannelEvent(notificationId: "ev", kind: .tapped, deviceId: "a"), at: Self.t0),
        ])
        #expect(results.count == 3)
        let stored = results.compactMap { try? $0.get() }
        #expect(stored.map(\.kind) == [.received, .tapped])
        #expect(throws: StoreError.unknownNotification("nope")) { try results[1].get() }
        #expect(try store.events(notificationId: "ev") == stored)
        #expect(try store.eventLog(after: before, namespaces: nil, limit: 10).map(\.kind) == ["received", "tapped"])
        #expect(try store.recordEvents([]).isEmpty)
    }

    /// Concurrent read-modify-write of one key from two stores (two processes) loses no update:
    /// what a Pulse revision counter or a Telegram flood window relies on.
    @Test(arguments: StoreKind.allCases) func channelStateUpdatesAreAtomicAcrossProcesses(store kind: StoreKind)
        async throws
    {
        let location = try kind.newLocation()
        let stores = [try kind.open(location), try kind.open(location)]
        let perWorker = 40
        try await withThrowingTaskGroup(of: [Int].self) { group in
            for w in 0..<4 {
                let state = stores[w % 2].channelState("pulse")
                group.addTask {
                    var seen: [Int] = []
                    for _ in 0..<perWorker {
                        let next: Int = try state.update("revision:ref") { current in
                            let value = current.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                            return (Array(String(value + 1).utf8), value + 1)
                        }
                        seen.append(next)
                    }
                    return seen
                }
            }
            var all: [Int] = []
            for try await seen in group {
                #expect(seen == seen.sorted(), "one worker's revisions increase")
                all += seen
            }
            #expect(all.sorted() == Array(1...(4 * perWorker)), "every revision handed out once")
        }
        let final = try stores[0].channelState("pulse").value(forKey: "revision:ref")
        #expect(final.map { String(decoding: $0, as: UTF8.self) } == String(4 * perWorker))
    }

    /// `update(_:reading:_:)` hands the body the other keys' values in order (nil when absent),
    /// writes only `key`, and writes nothing when the body throws; a rewritten value replaces the
    /// old one (the SQLite upsert), and nil deletes.
    @Test(arguments: StoreKind.allCases) func channelStateUpdateReadsOtherKeysInItsTransaction(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        let state = store.channelState("relay.pulse")
        try state.setValue(Array("phone".utf8), forKey: "phone:d1")
        try state.setValue(Array("key".utf8), forKey: "key:d1:s1")
        let seen: [String?] = try state.update("ledger:d1:s1", reading: ["phone:d1", "nope", "key:d1:s1"]) {
            current, values in
            #expect(current == nil)
            return (Array("v1".utf8), values.map { $0.map { String(decoding: $0, as: UTF8.self) } })
        }
        #expect(seen == ["phone", nil, "key"])
        #expect(try state.value(forKey: "ledger:d1:s1") == Array("v1".utf8))
        // Only this channel's rows; a key named twice (or the updated key among the others) is read
        // for each place it is named.
        let other = store.channelState("relay.other")
        try other.setValue(Array("elsewhere".utf8), forKey: "phone:d2")
        let again: [String?] = try state.update(
            "ledger:d1:s1", reading: ["phone:d1", "phone:d2", "phone:d1", "ledger:d1:s1"]
        ) {
            current, values in
            (current, values.map { $0.map { String(decoding: $0, as: UTF8.self) } })
        }
        #expect(again == ["phone", nil, "phone", "v1"])
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try state.update("ledger:d1:s1", reading: ["phone:d1"]) { _, _ -> (newValue: [UInt8]?, result: Int) in
                throw Refused()
            }
        }
        #expect(throws: Refused.self) {
            try state.update("ledger:d1:s2", reading: ["phone:d1"]) { _, _ -> (newValue: [UInt8]?, result: Int) in
                throw Refused()
            }
        }
        #expect(try state.value(forKey: "ledger:d1:s1") == Array("v1".utf8), "a refused body changes nothing")
        #expect(try state.value(forKey: "ledger:d1:s2") == nil, "nor creates its key")
        let previous: String? = try state.update("ledger:d1:s1", reading: []) { current, values in
            #expect(values.isEmpty)
            return (Array(repeating: 7, count: 5000), current.map { String(decoding: $0, as: UTF8.self) })
        }
        #expect(previous == "v1")
        #expect(try state.value(forKey: "ledger:d1:s1") == Array(repeating: 7, count: 5000))
        try state.setValue(Array("v3".utf8), forKey: "ledger:d1:s1")
        #expect(try state.value(forKey: "ledger:d1:s1") == Array("v3".utf8))
        _ = try state.update("ledger:d1:s1", reading: ["phone:d1"]) { _, _ in (nil, 0) }
        #expect(try state.value(forKey: "ledger:d1:s1") == nil)
        #expect(try state.value(forKey: "phone:d1") == Array("phone".utf8), "the others are only read")
    }

    /// Writers committing concurrently never make a reader miss an entry: sequence numbers follow
    /// commit order, so polling `after: last seen` sees every entry exactly once.
    @Test(arguments: StoreKind.allCases) func theEventLogIsReadInCommitOrder(store kind: StoreKind) async throws {
        let location = try kind.newLocation()
        let writers = [try kind.open(location), try kind.open(location), try kind.open(location)]
        let reader = try kind.open(location)
        let perWriter = 40
        let done = ManagedFlag()
        async let read: [Int64] = Task.detached {
            var seen: [Int64] = []
            var last: Int64 = 0
            while true {
                let finished = done.isSet
                let batch = try reader.eventLog(after: last, namespaces: nil, limit: 1000)
                seen += batch.map(\.sequence)
                last = batch.last?.sequence ?? last
                if finished && batch.isEmpty { return seen }
                // Give the thread back: a reader spinning on the shared pool once starved the
                // writers (and so itself) when other tests held the pool's other thread.
                try await Task.sleep(for: .milliseconds(2))
            }
        }.value
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (w, store) in writers.enumerated() {
                group.addTask {
                    for i in 0..<perWriter {
                        let n = HeraldNotification(id: "w\(w)-\(i)", title: "t")
                        try store.insertNotification(
                            n, steps: Self.all, deliveries: Self.rows(n, count: 2), now: Self.t0)
                    }
                }
            }
            try await group.waitForAll()
        }
        done.set()
        let seen = try await read
        let all = try reader.eventLog(after: 0, namespaces: nil, limit: 10_000).map(\.sequence)
        #expect(all.count == writers.count * perWriter)
        #expect(seen == all, "the polling reader saw every entry, in order, once")
    }

    /// Devices of namespace `home` (and one in `other`, which no group of `home` may reach).
    static func registerFanoutDevices(_ store: any HeraldStore) throws {
        let keys: [(String, String, String)] = [
            ("home", "c3", "phone"), ("home", "a1", "phone"), ("home", "b2", "phone"), ("home", "b2", "web"),
            ("home", "a1", "wear"), ("home", "t1", "telegram"), ("home", "t0", "telegram"), ("other", "a0", "phone"),
            ("other", "t5", "telegram"),
        ]
        _ = try store.upsertDevices(
            keys.map { Device(namespace: $0.0, deviceId: $0.1, platform: $0.2, fields: ["token": .string("\($0)")]) },
            now: t0)
    }

    /// The groups of a plan: a pending device group, a sink, a group suppressed at plan time, a
    /// group whose platforms have no device, a pending web group and a suppressed sink.
    static let fanoutGroups = [
        OutboxGroup(step: 0, position: 0, channel: "fcm", platforms: ["phone", "wear"], state: .pending, reason: nil),
        OutboxGroup(step: 0, position: 1, channel: "sink", platforms: nil, state: .pending, reason: nil),
        OutboxGroup(
            step: 1, position: 0, channel: "telegram", platforms: ["telegram"], state: .suppressed, reason: "quiet"),
        OutboxGroup(step: 1, position: 1, channel: "apns", platforms: ["ios"], state: .pending, reason: nil),
        OutboxGroup(step: 1, position: 2, channel: "webpush", platforms: ["web"], state: .pending, reason: nil),
        OutboxGroup(step: 2, position: 0, channel: "sink", platforms: nil, state: .suppressed, reason: "unless"),
    ]

    /// Issue 19: the store expands outbox groups itself (SQLite and PostgreSQL in SQL); the rows,
    /// the event log and the `suppressed` callback are those of the protocol's in-memory default.
    @Test(arguments: StoreKind.allCases) func outboxGroupsExpandAsTheDefaultDoes(store kind: StoreKind) throws {
        let store = try kind.open()
        try Self.registerFanoutDevices(store)
        let n = HeraldNotification(id: "fan", namespace: "home", title: "t")
        let keys = try store.devices(namespace: "home").map { (deviceId: $0.deviceId, platform: $0.platform) }
        let expected = OutboxGroup.expand(Self.fanoutGroups, notificationId: n.id, devices: keys, now: Self.t0)
        #expect(expected.count == 9)  // fcm 4 + sink 1, then telegram 2 + apns 0 + webpush 1, then sink 1
        var handed: [DeliveryRecord] = []
        let count = try store.insertNotification(
            n, steps: Self.all, groups: Self.fanoutGroups, now: Self.t0, suppressed: { handed.append($0) })
        let rows = try store.deliveries(notificationId: n.id)
        #expect(count == expected.count)
        typealias Shape = [String]
        func shape(_ r: DeliveryRecord) -> Shape {
            [
                "\(r.step)", "\(r.position)", r.channel, r.deviceId ?? "-", r.platform ?? "-", r.state.rawValue,
                r.reason ?? "-", "\(r.attempts)",
            ]
        }
        #expect(rows.map(shape) == expected.map(shape))
        #expect(rows.allSatisfy { $0.updatedAt == Self.t0 })
        #expect(!rows.contains { $0.deviceId == "a0" || $0.deviceId == "t5" }, "another namespace's devices")
        // Suppressed rows are handed over once each, as stored.
        let stored = Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0) })
        #expect(handed.map(shape) == expected.filter { $0.state == .suppressed }.map(shape))
        #expect(handed.allSatisfy { stored[$0.id].map(shape) == shape($0) })
        // Ids: well-formed version-7 UUIDs of the insert's millisecond, all distinct.
        let stamp = UUIDGenerator.makeTimeOrdered(1, at: Self.t0.millisecondsSince1970, random: SystemRandom())[0]
        for id in rows.map(\.id) {
            #expect(UUID(uuidString: id) != nil, "\(id)")
            #expect(id == id.lowercased() && id.count == 36, "\(id)")
            #expect(Array(id)[14] == "7" && "89ab".contains(Array(id)[19]), "\(id)")
            #expect(id.prefix(13) == stamp.prefix(13), "\(id)")
        }
        #expect(Set(rows.map(\.id)).count == rows.count)
        // A pending group's ids are one series numbered by the database (SQLite by the device's
        // rowid, PostgreSQL by row number; the stores' own tests check each numbering): one prefix.
        for channel in ["fcm", "webpush"] {
            let group = rows.filter { $0.channel == channel }
            let first = try #require(group.first?.id)
            #expect(group.allSatisfy { $0.id.prefix(24) == first.prefix(24) }, "\(channel): \(group.map(\.id))")
        }
        // The event log: the notification with the number of rows, then one entry per suppressed row.
        let log = try store.eventLog(after: 0, namespaces: ["home"], limit: 100)
        #expect(log.map(\.kind) == ["notification", "delivery", "delivery", "delivery"])
        #expect(log.first?.data["planned"] == .number(Double(expected.count)))
        #expect(log.dropFirst().map { $0.data["outcome"] } == Array(repeating: .string("suppressed"), count: 3))
        #expect(log.dropFirst().map { $0.data["deviceId"]?.stringValue ?? "-" } == ["t0", "t1", "-"])
        #expect(log.dropFirst().map { $0.data["reason"]?.stringValue ?? "-" } == ["quiet", "quiet", "unless"])
        #expect(log.dropFirst().map { $0.data["channel"]?.stringValue ?? "-" } == ["telegram", "telegram", "sink"])
        // The same id again stores nothing more.
        #expect(throws: StoreError.duplicateNotification("fan")) {
            _ = try store.insertNotification(n, steps: Self.all, groups: Self.fanoutGroups, now: Self.t0) { _ in }
        }
        #expect(try store.deliveries(notificationId: n.id).map(\.id) == rows.map(\.id))
        #expect(try store.lastEventSequence() == log.last?.sequence)
        // The pending rows are claimed in device order within their (step, channel).
        let claimed = try store.claimPending(
            notificationId: n.id, step: 0, channel: "fcm", owner: "w", until: Self.t0.addingTimeInterval(60),
            now: Self.t0, after: 0, limit: 100)
        #expect(
            claimed.records.map { "\($0.deviceId ?? "")/\($0.platform ?? "")" } == [
                "a1/phone", "a1/wear", "b2/phone", "c3/phone",
            ])
    }

    /// The namespace's device count per platform and the devices of a list of keys, one query each.
    /// Rows stored with a lease (a sender about to attempt them) are claimed by nobody else until it
    /// runs out: not by a worker's batch claim, not by another owner's claim; the lease's owner claims
    /// them at once; once the lease has run out anyone may. Suppressed rows carry no lease.
    @Test(arguments: StoreKind.allCases) func rowsBornLeasedAreTheSendersUntilTheLeaseRunsOut(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        _ = try store.upsertDevices(
            (0..<5).map { Device(deviceId: "d\($0)", platform: "phone", fields: ["token": .string("t\($0)")]) },
            now: Self.t0)
        let groups = [
            OutboxGroup(step: 0, position: 0, channel: "fcm", platforms: ["phone"], state: .pending, reason: nil),
            OutboxGroup(step: 0, position: 1, channel: "sink", platforms: nil, state: .pending, reason: nil),
        ]
        let until = Self.t0.addingTimeInterval(60)
        let rows = try store.insertNotification(
            HeraldNotification(id: "leased", title: "t"), steps: Self.all, groups: groups,
            lease: OutboxLease(owner: "sender", until: until), now: Self.t0
        ) { _ in }
        #expect(rows == 6)
        let worker = try store.claimPendingBatch(owner: "worker", until: until, now: Self.t0, limit: 100)
        #expect(worker.deliveries.isEmpty, "a worker took \(worker.deliveries.count) rows born leased")
        let other = try store.claimPending(
            notificationId: "leased", step: 0, channel: "fcm", owner: "other", until: until, now: Self.t0)
        #expect(other.isEmpty)
        let mine = try store.claimPending(
            notificationId: "leased", step: 0, channel: "fcm", owner: "sender", until: until.addingTimeInterval(600),
            now: Self.t0)
        #expect(mine.count == 5)
        // The sink row, never claimed by its sender: free once the lease has run out.
        let later = until.addingTimeInterval(1)
        let expired = try store.claimPendingBatch(
            owner: "worker", until: later.addingTimeInterval(60), now: later, limit: 100)
        #expect(expired.deliveries.map(\.channel) == ["sink"])
        // Without a lease, the rows are free at once.
        _ = try store.insertNotification(
            HeraldNotification(id: "free", title: "t"), steps: Self.all, groups: groups, now: Self.t0
        ) { _ in }
        let free = try store.claimPendingBatch(owner: "worker", until: until, now: Self.t0, limit: 100)
        #expect(free.deliveries.count == 6)
    }

    /// `mode: first`: on SQLite, recording a delivered result suppresses the step's pending rows on
    /// the later channels, and nothing else (not another step, not another channel, not without a
    /// delivery); the default (PostgreSQL) records only and leaves the suppression to the caller.
    @Test(arguments: StoreKind.allCases) func aDeliveredRecordSuppressesTheStepsLaterChannels(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        let n = HeraldNotification(id: "first", title: "t")
        func row(_ id: String, step: Int, position: Int, channel: String) -> DeliveryRecord {
            DeliveryRecord(
                id: id, notificationId: n.id, step: step, position: position, channel: channel, deviceId: "d",
                platform: "phone", state: .pending, updatedAt: Self.t0)
        }
        let rows = [
            row("local", step: 0, position: 0, channel: "local"),
            row("cloud-a", step: 0, position: 1, channel: "cloud"),
            row("cloud-b", step: 0, position: 1, channel: "cloud"),
            row("other", step: 0, position: 2, channel: "other"),
            row("cloud-later", step: 1, position: 0, channel: "cloud"),
        ]
        let steps = [
            StepRule(mode: .first, unlessDelivered: nil, timeout: nil),
            StepRule(mode: .all, unlessDelivered: nil, timeout: nil),
        ]
        try store.insertNotification(n, steps: steps, deliveries: rows, now: Self.t0)
        let rule = StepSuppression(
            notificationId: n.id, step: 0, channels: ["cloud"], reason: "mode first: delivered by local")
        let later = Self.t0.addingTimeInterval(1)

        // A failure suppresses nothing.
        let failed = try store.record(
            [AttemptRecord(deliveryId: "local", attempt: 1, state: .failed, reason: "not connected")], now: later,
            suppressing: rule)
        #expect(failed.suppressed.isEmpty)
        #expect(!failed.complete)
        #expect(try store.deliveries(notificationId: n.id).filter { $0.state == .pending }.count == 4)

        let delivered = try store.record(
            [AttemptRecord(deliveryId: "local", attempt: 2, state: .delivered)], now: later, suppressing: rule)
        #expect(delivered.removed.isEmpty)
        guard kind == .sqlite else {
            // The default: the result recorded, the suppression left to the caller.
            #expect(!delivered.complete)
            #expect(delivered.suppressed.isEmpty)
            let states = Dictionary(
                uniqueKeysWithValues: try store.deliveries(notificationId: n.id).map { ($0.id, $0.state) })
            #expect(
                states == [
                    "local": .delivered, "cloud-a": .pending, "cloud-b": .pending, "other": .pending,
                    "cloud-later": .pending,
                ])
            return
        }
        // SQLite: the step's cloud rows suppressed in the same transaction, as they are now.
        #expect(delivered.complete)
        #expect(Set(delivered.suppressed.map(\.id)) == ["cloud-a", "cloud-b"])
        #expect(delivered.suppressed.allSatisfy { $0.state == .suppressed && $0.reason == rule.reason })
        let states = Dictionary(uniqueKeysWithValues: try store.deliveries(notificationId: n.id).map { ($0.id, $0) })
        #expect(states["local"]?.state == .delivered)
        #expect(states["cloud-a"]?.state == .suppressed)
        #expect(states["cloud-a"]?.reason == rule.reason)
        #expect(states["cloud-b"]?.state == .suppressed)
        #expect(states["other"]?.state == .pending)
        #expect(states["cloud-later"]?.state == .pending)

        // Again: nothing left to suppress.
        let again = try store.record(
            [AttemptRecord(deliveryId: "local", attempt: 2, state: .delivered)], now: later, suppressing: rule)
        #expect(again.suppressed.isEmpty)
        #expect(again.complete)
    }

    /// One record suppresses at most ``StepSuppression/limit`` rows and says when rows are left, so a
    /// large fan-out's later channel is suppressed by the caller in pages.
    @Test func aRecordSuppressesAtMostItsLimit() throws {
        let store = try StoreKind.sqlite.open()
        let n = HeraldNotification(id: "wide", title: "t")
        let count = StepSuppression.limit + 1
        let first = DeliveryRecord(
            id: "sink", notificationId: n.id, step: 0, position: 0, channel: "sink", deviceId: nil, platform: nil,
            state: .pending, updatedAt: Self.t0)
        let rest = (0..<count).map { i in
            DeliveryRecord(
                id: String(format: "fcm-%05d", i), notificationId: n.id, step: 0, position: 1, channel: "fcm",
                deviceId: "d\(i)", platform: "phone", state: .pending, updatedAt: Self.t0)
        }
        try store.insertNotification(
            n, steps: [StepRule(mode: .first, unlessDelivered: nil, timeout: nil)], deliveries: [first] + rest,
            now: Self.t0)
        let rule = StepSuppression(notificationId: n.id, step: 0, channels: ["fcm"], reason: "mode first")
        let delivered = [AttemptRecord(deliveryId: "sink", attempt: 1, state: .delivered)]
        let page = try store.record(delivered, now: Self.t0, suppressing: rule)
        #expect(page.suppressed.count == StepSuppression.limit)
        #expect(!page.complete)
        let last = try store.record(delivered, now: Self.t0, suppressing: rule)
        #expect(last.suppressed.map(\.id) == [String(format: "fcm-%05d", count - 1)])
        #expect(last.complete)
        #expect(try store.deliveries(notificationId: n.id).filter { $0.state == .suppressed }.count == count)
    }

    /// A sender reads its rows born leased in pages (SQLite without a write); a page holding a row
    /// that is not the sender's is claimed instead, so another owner's live lease is still respected.
    @Test(arguments: StoreKind.allCases) func aSenderReadsItsRowsBornLeasedInPages(store kind: StoreKind) throws {
        let store = try kind.open()
        _ = try store.upsertDevices(
            (0..<5).map { Device(deviceId: "d\($0)", platform: "phone", fields: ["token": .string("t\($0)")]) },
            now: Self.t0)
        let groups = [
            OutboxGroup(step: 0, position: 0, channel: "fcm", platforms: ["phone"], state: .pending, reason: nil)
        ]
        let until = Self.t0.addingTimeInterval(60)
        _ = try store.insertNotification(
            HeraldNotification(id: "born", title: "t"), steps: Self.all, groups: groups,
            lease: OutboxLease(owner: "sender", until: until), now: Self.t0
        ) { _ in }
        func page(_ owner: String, after: Int64) throws -> ClaimPage {
            try store.leasedPending(
                notificationId: "born", step: 0, channel: "fcm", owner: owner, until: until.addingTimeInterval(1),
                now: Self.t0, after: after, limit: 3)
        }
        // Every row once, in order (SQLite in pages of 3; the default claims them in one).
        var read: [[String?]] = []
        var after: Int64? = 0
        while let position = after {
            let p = try page("sender", after: position)
            if !p.records.isEmpty { read.append(p.records.map(\.deviceId)) }
            after = p.next
        }
        #expect(read.flatMap { $0 } == ["d0", "d1", "d2", "d3", "d4"])
        if kind == .sqlite { #expect(read.map(\.count) == [3, 2]) }
        // Another owner gets nothing while the sender's lease lasts.
        #expect(try page("other", after: 0).records.isEmpty)
        if kind == .sqlite, let sqlite = store as? SQLiteStore {
            // Read, not claimed: the leases are as the insert wrote them.
            let untils = try sqlite.db.query("SELECT DISTINCT lease_until AS u FROM deliveries").compactMap {
                $0.int("u")
            }
            #expect(untils == [SQLiteStore.ms(until)])
        }
    }

    @Test(arguments: StoreKind.allCases) func platformCountsAndDevicesByKey(store kind: StoreKind) throws {
        let store = try kind.open()
        try Self.registerFanoutDevices(store)
        #expect(try store.devicePlatformCounts(namespace: "home") == ["phone": 3, "web": 1, "wear": 1, "telegram": 2])
        #expect(try store.devicePlatformCounts(namespace: "other") == ["phone": 1, "telegram": 1])
        #expect(try store.devicePlatformCounts(namespace: "none").isEmpty)
        #expect(try store.devicePlatformCounts(namespace: nil) == ["phone": 4, "web": 1, "wear": 1, "telegram": 3])
        let found = try store.devices(
            namespace: "home",
            keys: [
                ("b2", "web"), ("a1", "phone"), ("a0", "phone"), ("zz", "phone"), ("b2", "telegram"),
                ("t1", "telegram"),
            ])
        #expect(found.map { "\($0.deviceId)/\($0.platform)" }.sorted() == ["a1/phone", "b2/web", "t1/telegram"])
        #expect(found.allSatisfy { $0.namespace == "home" && $0.fields["token"] != nil })
        #expect(try store.devices(namespace: "home", keys: []).isEmpty)
    }

    @Test(arguments: StoreKind.allCases) func cooldownsAndBadges(store kind: StoreKind) throws {
        let store = try kind.open()
        let keys: [(key: String, window: Duration)] = [("a", .seconds(10)), ("b", .seconds(1))]
        #expect(try store.touchCooldowns(namespace: "n", tag: "t", keys: keys, now: Self.t0).isEmpty)
        #expect(
            try store.touchCooldowns(namespace: "n", tag: "t", keys: keys, now: Self.t0.addingTimeInterval(5)) == ["a"])
        #expect(
            try store.touchCooldowns(namespace: "n", tag: "u", keys: keys, now: Self.t0.addingTimeInterval(5)).isEmpty)
        try store.addBadgeTag(namespace: "n", tag: "x", now: Self.t0)
        try store.addBadgeTag(namespace: "n", tag: "x", now: Self.t0)
        try store.addBadgeTag(namespace: "n", tag: "y", now: Self.t0)
        #expect(try store.pendingTagCount(namespace: "n") == 2)
        try store.clearBadge(namespace: "n")
        #expect(try store.pendingTagCount(namespace: "n") == 0)
        let state = store.channelState("apns")
        try state.setValue([1, 2, 0, 255], forKey: "k")
        #expect(try state.value(forKey: "k") == [1, 2, 0, 255])
        try state.setValue(nil, forKey: "k")
        #expect(try state.value(forKey: "k") == nil)
    }
}

/// A flag set once by one task and read by another.
final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// PostgreSQL only: an event-log writer that has taken its sequence numbers holds the event-log
/// lock until it commits, so another writer cannot commit a higher number first (a reader that had
/// seen the higher number would never see the lower one). Deterministic: the first transaction is
/// held open by hand while the second writer runs.
@Suite struct PostgresEventLogOrderTests {
    @Test func aLaterWriterWaitsForTheEarlierCommit() async throws {
        let url = try TestPostgres.start().createDatabase()
        let first = try PostgresStore(url: url)
        let second = try PostgresStore(url: url)
        defer {
            first.close()
            second.close()
        }
        let t0 = StoreContractTests.t0
        let n1 = HeraldNotification(id: "n1", title: "t")
        try first.insertNotification(n1, steps: StoreContractTests.all, deliveries: [], now: t0)
        let secondDone = ManagedFlag()
        let finished = DispatchSemaphore(value: 0)
        var doneWhileOpen = false
        try first.db.transaction { c in
            try PostgresStore.appendEvents([("default", "action", "n1", .object([:]))], at: 1, c)
            Thread.detachNewThread {
                let n2 = HeraldNotification(id: "n2", title: "t")
                _ = try? second.insertNotification(n2, steps: StoreContractTests.all, deliveries: [], now: t0)
                secondDone.set()
                finished.signal()
            }
            Thread.sleep(forTimeInterval: 0.5)
            doneWhileOpen = secondDone.isSet
        }
        #expect(!doneWhileOpen, "the second writer committed while the first held a lower number")
        #expect(finished.wait(timeout: .now() + 20) == .success)
        let log = try first.eventLog(after: 0, namespaces: nil, limit: 10)
        #expect(log.map(\.notificationId) == ["n1", "n1", "n2"])
        #expect(log.map(\.kind) == ["notification", "action", "notification"])
    }
}

/// PostgreSQL only: storing outbox groups wakes the workers (`NOTIFY`) only when a row is pending.
@Suite struct PostgresOutboxGroupWakeTests {
    @Test func onlyPendingRowsWakeTheWorkers() async throws {
        let url = try TestPostgres.start().createDatabase()
        let clock = ManualClock()
        let store = try PostgresStore(url: url, clock: clock)
        let listener = try PostgresStore(url: url)
        defer {
            store.close()
            listener.close()
        }
        try StoreContractTests.registerFanoutDevices(store)
        _ = await listener.waitForWork(timeout: .milliseconds(10))  // LISTEN from now on
        func insert(_ id: String, _ groups: [OutboxGroup]) throws -> Int {
            clock.advance(by: .milliseconds(200))  // past the debounce
            return try store.insertNotification(
                HeraldNotification(id: id, namespace: "home", title: "t"), steps: StoreContractTests.all,
                groups: groups, now: clock.now()
            ) { _ in }
        }
        let quiet = OutboxGroup(
            step: 0, position: 0, channel: "telegram", platforms: ["telegram"], state: .suppressed, reason: "quiet")
        let none = OutboxGroup(step: 0, position: 1, channel: "apns", platforms: ["ios"], state: .pending, reason: nil)
        #expect(try insert("quiet", [quiet, none]) == 2)
        #expect(!(await listener.waitForWork(timeout: .milliseconds(300))), "no pending row: no wake-up")
        let fcm = OutboxGroup(step: 0, position: 0, channel: "fcm", platforms: ["phone"], state: .pending, reason: nil)
        #expect(try insert("loud", [fcm]) == 3)
        #expect(await listener.waitForWork(timeout: .seconds(5)), "pending rows wake the workers")
    }
}
