import ChannelAPI
import Foundation
import HeraldHTTPTesting
import HeraldSync
import Router
import RouterTesting
import Testing

/// Runs a short Python `sqlite3` script on a store file: an independent way to build foreign or
/// damaged files, and to find where a table lives on disk.
private func python(_ script: String, _ arguments: [String]) throws -> String {
    let r = try Subprocess.run(executable: "python3", arguments: ["-c", script] + arguments)
    guard r.code == 0 else { throw InputFailure("python exited \(r.code): \(r.stderr)") }
    return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

private struct InputFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Overwrites the root page of `table` (a leaf while the table is small) with garbage, the way a
/// damaged disk block would. The store must be closed (its WAL checkpointed) first.
func damageTable(_ table: String, inStoreAt path: String) throws {
    #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the store must be closed first")
    let script = """
        import sqlite3, sys
        path, table = sys.argv[1], sys.argv[2]
        db = sqlite3.connect(path)
        size = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()[0]
        db.close()
        with open(path, "r+b") as f:
            f.seek((root - 1) * size)
            f.write(bytes([0xFF]) * size)
        print(root)
        """
    let root = try python(script, [path, table])
    #expect(Int(root) ?? 0 > 1, "table \(table) has its own page")
}

@Suite struct StoreOpeningTests {
    private func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-store-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func refusal(_ path: String) throws -> StoreError {
        do {
            let store = try SQLiteStore(path: path)
            store.close()
        } catch let error as StoreError {
            return error
        }
        throw InputFailure("\(path) was opened")
    }

    @Test func anEmptyFileIsRefusedAndLeftEmpty() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let error = try refusal(path)
        #expect(error == .notAStore(path: path, reason: "the file is empty (0 bytes)"))
        #expect(error.description.contains(path))
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int == 0)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func aFileThatIsNotSQLiteIsRefusedUnchanged() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        let content = Data("this is a shopping list, not a database\n".utf8)
        #expect(FileManager.default.createFile(atPath: path, contents: content))
        #expect(try refusal(path) == .notAStore(path: path, reason: "the file is not an SQLite database"))
        #expect(FileManager.default.contents(atPath: path) == content)
    }

    @Test func anSQLiteDatabaseWithoutHeraldsSchemaIsRefused() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let foreign = dir + "/foreign.db"
        _ = try python(
            "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute('CREATE TABLE notes(x)')\ndb.commit()",
            [foreign])
        #expect(
            try refusal(foreign)
                == .notAStore(path: foreign, reason: "it is an SQLite database without Herald's schema"))
        // Untouched: still no Herald tables, no version.
        #expect(
            try python(
                "import sqlite3, sys\nprint(sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0])",
                [foreign]) == "0")
        // An empty SQLite database (valid header, no tables) is not a store either.
        let blank = dir + "/blank.db"
        _ = try python(
            "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute('CREATE TABLE t(x)')\ndb.execute('DROP TABLE t')\ndb.commit()",
            [blank])
        #expect(try FileManager.default.attributesOfItem(atPath: blank)[.size] as? Int ?? 0 > 0)
        #expect(
            try refusal(blank) == .notAStore(path: blank, reason: "it is an SQLite database without Herald's schema"))
        // Another application's database (its own application_id) is refused even with look-alike tables.
        let other = dir + "/other.db"
        _ = try python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('PRAGMA application_id = 1234')
            db.execute('PRAGMA user_version = 1')
            for t in ('devices', 'notifications', 'deliveries'):
                db.execute('CREATE TABLE %s(x)' % t)
            db.commit()
            """, [other])
        #expect(
            try refusal(other)
                == .notAStore(
                    path: other, reason: "it is an SQLite database of another application (application_id 1234)"))
    }

    /// Migration 3: a version-2 store gains the partial index of pending rows, and the batched
    /// drain's claim (pending rows in id order) reads it instead of scanning every delivery ever
    /// stored. Checked with Python's sqlite3 (EXPLAIN QUERY PLAN), not through the store.
    @Test func aVersion2StoreGainsThePendingIndex() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        try SQLiteStore(path: path).close()
        _ = try python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('DROP INDEX deliveries_pending')
            db.execute('DROP INDEX notifications_public_id')
            db.execute('ALTER TABLE notifications DROP COLUMN public_id')
            db.execute('DROP TABLE relay_requests')
            db.execute('PRAGMA user_version = 2')
            db.commit()
            """, [path])
        try SQLiteStore(path: path).close()
        let out = try python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            print(db.execute('PRAGMA user_version').fetchone()[0])
            plan = db.execute("EXPLAIN QUERY PLAN SELECT id FROM deliveries WHERE state = 'pending' "
                              "AND (lease_owner IS NULL OR lease_until < 5) ORDER BY id LIMIT 125").fetchall()
            print(' | '.join(row[-1] for row in plan))
            """, [path])
        let lines = out.split(separator: "\n").map(String.init)
        #expect(lines.first == "5")  // every migration ran
        #expect(lines.last?.contains("deliveries_pending") == true, "query plan: \(out)")
    }

    /// Migration 4: a version-3 store gains `notifications.public_id`; its notifications stay
    /// readable, and an id another namespace holds is then stored under a scoped key.
    @Test func aVersion3StoreGainsThePublicIdColumn() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        let store = try SQLiteStore(path: path)
        try store.insertNotification(
            HeraldNotification(id: "old", namespace: "a", title: "t"), steps: [], deliveries: [], now: Date())
        store.close()
        _ = try python(
            """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.execute('DROP INDEX notifications_public_id')
            db.execute('ALTER TABLE notifications DROP COLUMN public_id')
            db.execute('DROP TABLE relay_requests')
            db.execute('PRAGMA user_version = 3')
            db.commit()
            """, [path])
        let migrated = try SQLiteStore(path: path)
        defer { migrated.close() }
        #expect(try migrated.notification(id: "old")?.notification.namespace == "a")
        try migrated.insertNotification(
            HeraldNotification(id: NotificationKey.scoped("old", namespace: "b"), namespace: "b", title: "t"),
            steps: [], deliveries: [], now: Date())
        #expect(try migrated.notificationKeys(publicID: "old").map(\.namespace).sorted() == ["a", "b"])
    }

    @Test func aStoreFromANewerHeraldIsRefused() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        try SQLiteStore(path: path).close()
        _ = try python(
            "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute('PRAGMA user_version = 99')\ndb.commit()",
            [path])
        let error = try refusal(path)
        #expect(error == .newerSchema(path: path, version: 99, supported: 5))
        #expect(error.description.contains("newer"))
    }

    @Test func onlyAMissingFileIsCreatedAndItCarriesHeraldsMarker() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/home/herald.db"
        let store = try SQLiteStore(path: path)
        _ = try store.upsertDevice(Device(deviceId: "d", platform: "phone", fields: ["token": "t-1"]), now: Date())
        store.close()
        let marker = try python(
            "import sqlite3, sys\nprint(sqlite3.connect(sys.argv[1]).execute('PRAGMA application_id').fetchone()[0])",
            [path])
        #expect(marker == "\(0x4852_4C44)")
        // Reopening keeps what was stored.
        let again = try SQLiteStore(path: path)
        #expect(try again.devices(namespace: nil).map(\.deviceId) == ["d"])
        again.close()
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir + "/home").filter { $0.contains("creating") }
                .isEmpty)
    }

    @Test func aStoreMadeBeforeTheMarkerStillOpensAndGetsIt() throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        let store = try SQLiteStore(path: path)
        _ = try store.upsertDevice(Device(deviceId: "old", platform: "phone", fields: ["token": "t-2"]), now: Date())
        store.close()
        _ = try python(
            "import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute('PRAGMA application_id = 0')\ndb.commit()",
            [path])
        let legacy = try SQLiteStore(path: path)
        #expect(try legacy.devices(namespace: nil).map(\.deviceId) == ["old"])
        legacy.close()
        let marker = try python(
            "import sqlite3, sys\nprint(sqlite3.connect(sys.argv[1]).execute('PRAGMA application_id').fetchone()[0])",
            [path])
        #expect(marker == "\(0x4852_4C44)")
    }

    @Test func concurrentFirstOpensAllSucceedOnOneStore() async throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/herald.db"
        let opened = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<8 {
                group.addTask {
                    do {
                        let s = try SQLiteStore(path: path)
                        _ = try s.upsertDevice(
                            Device(deviceId: "d\(i)", platform: "phone", fields: ["token": .string("t\(i)")]),
                            now: Date())
                        s.close()
                        return true
                    } catch {
                        return false
                    }
                }
            }
            var all = true
            for await ok in group { all = all && ok }
            return all
        }
        #expect(opened)
        let store = try SQLiteStore(path: path)
        #expect(try store.devices(namespace: nil).count == 8)
        store.close()
    }
}

@Suite struct ReadOnlyStoreTests {
    @Test func openModeFollowsWhatAccessSays() {
        func reason(_ access: StoreAccess, file: Bool, directory: Bool) -> String? {
            SQLiteStore.readOnlyReason(
                access: access, fileWritable: file, directoryWritable: directory, directory: "/home/x")
        }
        #expect(reason(.automatic, file: true, directory: true) == nil)
        #expect(reason(.automatic, file: false, directory: true) == "the file is not writable")
        #expect(reason(.automatic, file: true, directory: false)?.contains("directory /home/x is not writable") == true)
        #expect(reason(.readOnly, file: true, directory: true) == "opened read-only")
        #expect(reason(.readWrite, file: false, directory: false) == nil)
    }

    /// Root passes `access(2)` for any file, so this forces the read-only open that a non-writable
    /// HERALD_HOME selects, and checks what it does: reads work, writes name the file and the refusal.
    @Test func aReadOnlyStoreReadsAndRefusesWritesByName() async throws {
        let path = Harness.tempPath()
        let h = try await Harness.make(routes: "routes:\n  default:\n    - deliver: [fcm]\n", storePath: path)
        try await h.register("phone", "pixel")
        let sent = try await h.router.send(HeraldNotification(id: "n-ro", title: "t"))
        await h.router.shutdown()

        let store = try SQLiteStore(path: path, access: .readOnly)
        defer { store.close() }
        #expect(store.readOnlyReason == "opened read-only")
        let ro = try await Router(
            config: h.router.config, registry: h.registry,
            options: RouterOptions(clock: h.clock, random: FixedRandom(), logSink: RecordingLogSink(), store: store))
        #expect(try ro.devices().map(\.deviceId) == ["pixel"])
        #expect(try ro.history(id: "n-ro").first?.deliveries.map(\.id) == sent.deliveries.map(\.id))
        #expect(try ro.explain(HeraldNotification(title: "x")).steps.first?.channels.first?.devices.count == 1)
        let refused = StoreError.readOnly(path: path, refused: "register a device", reason: "opened read-only")
        await #expect(throws: refused) {
            try await ro.register(Device(deviceId: "tab", platform: "phone", fields: ["token": "t-3"]))
        }
        #expect(refused.description.contains(path) && refused.description.contains("cannot register a device"))
        await #expect(throws: StoreError.self) { try await ro.send(HeraldNotification(id: "n-2", title: "t")) }
        #expect(throws: StoreError.self) { try ro.unregister(deviceId: "pixel") }
        await ro.shutdown()
        // Nothing was written.
        let check = try SQLiteStore(path: path, access: .readOnly)
        #expect(try check.devices(namespace: nil).map(\.deviceId) == ["pixel"])
        #expect(try check.notification(id: "n-2") == nil)
        check.close()
    }

    @Test func aReadOnlyOpenNeverCreatesAStore() throws {
        let path = Harness.tempPath()
        #expect(throws: StoreError.self) { try SQLiteStore(path: path, access: .readOnly) }
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}

@Suite struct DamagedStoreTests {
    static let routes = "routes:\n  default:\n    - deliver: [fcm]\n"
    static let channels = Harness.channelsYAML.replacingOccurrences(
        of: "fcm: { type: rec-fcm }", with: "fcm: { type: rec-fcm, retry: { attempts: 5, initial: 10s, max: 1m } }")

    /// A damaged page where results are recorded (the attempts table): the claim rehearses the
    /// record, fails, and nothing is sent, on this drain and the next.
    @Test func aStoreThatCannotRecordStopsTheDrainBeforeSending() async throws {
        let path = Harness.tempPath()
        let first = try await Harness.make(routes: Self.routes, channels: Self.channels, storePath: path)
        try await first.register("phone", "pixel")
        first.fcm.answer { t, _ in .retry(t, status: 503, reason: "UNAVAILABLE") }
        let report = try await first.router.send(HeraldNotification(id: "n-damaged", title: "t"))
        #expect(report.outcome("fcm") == .retry)
        await first.router.shutdown()
        try damageTable("attempts", inStoreAt: path)

        let later = ManualClock(start: first.clock.now().addingTimeInterval(3600))
        let second = try await Harness.make(
            routes: Self.routes, channels: Self.channels, storePath: path, clock: later)
        for _ in 0..<2 {
            await #expect {
                try await second.router.drain()
            } throws: { error in
                guard case .writeFailed(let operation, let detail)? = error as? StoreError else { return false }
                return operation == "claim due retries" && detail.contains(path) && detail.contains("malformed")
            }
        }
        #expect(second.fcm.targets.isEmpty)
        await second.router.shutdown()
    }

    /// The same damage met by `send`: its claim rehearses the record, fails, and nothing is sent.
    @Test func aSendThatCannotClaimFailsAndSendsNothing() async throws {
        let path = Harness.tempPath()
        let first = try await Harness.make(routes: Self.routes, channels: Self.channels, storePath: path)
        try await first.register("phone", "pixel")
        first.fcm.answer { t, _ in .retry(t, status: 503, reason: "UNAVAILABLE") }
        _ = try await first.router.send(HeraldNotification(id: "n-first", title: "t"))
        await first.router.shutdown()
        try damageTable("attempts", inStoreAt: path)
        let second = try await Harness.make(routes: Self.routes, channels: Self.channels, storePath: path)
        await #expect(throws: StoreError.self) {
            try await second.router.send(HeraldNotification(id: "n-next", title: "t"))
        }
        #expect(second.fcm.targets.isEmpty)
        await second.router.shutdown()
    }
}

@Suite struct IdempotentSendAndBatchRegisterTests {
    static let routes = "routes:\n  default:\n    - deliver: [fcm]\n"

    @Test func sendingAnIdTwiceReturnsTheStoredReportWithoutRoutingAgain() async throws {
        let h = try await Harness.make(routes: Self.routes)
        try await h.register("phone", "pixel")
        let first = try await h.router.send(HeraldNotification(id: "dup-1", title: "first"))
        let again = try await h.router.send(HeraldNotification(id: "dup-1", title: "second"))
        #expect(!first.replayed)
        #expect(again.replayed)
        #expect(again.deliveries.map(\.id) == first.deliveries.map(\.id))
        #expect(again.deliveries.map(\.state) == [.delivered])
        #expect(h.fcm.targets.count == 1)
        #expect(again.json["replayed"] == true)
        #expect(first.json["replayed"] == nil)
        #expect(try h.router.history(id: "dup-1").first?.notification.title == "first")
        // Persisting only (enqueue) a stored id is refused by name, not with a raw constraint error.
        #expect(throws: StoreError.duplicateNotification("dup-1")) {
            try h.router.enqueue(HeraldNotification(id: "dup-1", title: "third"))
        }
        await h.router.shutdown()
    }

    @Test func aBatchWithOneRefusedDeviceStoresNone() async throws {
        let h = try await Harness.make(routes: Self.routes)
        let good = (1...3).map {
            Device(deviceId: "p\($0)", platform: "phone", fields: ["token": .string("tok-\($0)")])
        }
        let refused = Device(deviceId: "slate", platform: "phone", fields: [:])
        await #expect {
            try await h.router.register(good + [refused])
        } throws: { error in
            guard let batch = error as? DeviceBatchError, let v = batch.error as? ValidationError else { return false }
            return batch.index == 3 && v.field == "token"
        }
        #expect(try h.router.devices().isEmpty)
        let results = try await h.router.register(good)
        #expect(results.map(\.created) == [true, true, true])
        #expect(try h.router.devices().map(\.deviceId) == ["p1", "p2", "p3"])
        await h.router.shutdown()
    }
}

/// A real SQLite store whose `record` can be made to fail after claims succeed (as when the disk
/// fills between the claim and the record): every other call goes to the SQLite store unchanged.
final class RecordRefusingStore: HeraldStore {
    let base: SQLiteStore
    private let refusing = Locked(false)

    init(path: String) throws { base = try SQLiteStore(path: path) }

    /// Records allowed before refusing (nil: refuse none), and how often `notification(id:)` was read.
    private let allowedRecords = Locked<Int?>(nil)
    private let notificationReads = Locked(0)

    func refuseRecords() { refusing.withLock { $0 = true } }

    /// Lets `count` more `record` calls through, then refuses every one.
    func refuseRecords(after count: Int) { allowedRecords.withLock { $0 = count } }

    /// Lets every `record` through again.
    func acceptRecords() {
        refusing.withLock { $0 = false }
        allowedRecords.withLock { $0 = nil }
    }

    /// How many times `notification(id:)` was called.
    var notificationReadCount: Int { notificationReads.withLock { $0 } }

    func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device] {
        let refuse =
            refusing.withLock({ $0 })
            || allowedRecords.withLock { left in
                guard let n = left else { return false }
                if n <= 0 { return true }
                left = n - 1
                return false
            }
        if refuse {
            throw StoreError.writeFailed(operation: "record delivery results", detail: "disk full (test)")
        }
        return try base.record(attempts, now: now)
    }

    // The streaming send path goes to SQLite's paged implementations, as the router's own store does.
    func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup], now: Date,
        suppressed: (DeliveryRecord) -> Void
    ) throws -> Int {
        try base.insertNotification(notification, steps: steps, groups: groups, now: now, suppressed: suppressed)
    }
    func devicePlatformCounts(namespace: String?) throws -> [String: Int] {
        try base.devicePlatformCounts(namespace: namespace)
    }
    func devices(namespace: String, keys: [(deviceId: String, platform: String)]) throws -> [Device] {
        try base.devices(namespace: namespace, keys: keys)
    }
    func deliveryTallies(notificationId: String) throws -> [DeliveryTally] {
        try base.deliveryTallies(notificationId: notificationId)
    }
    func claimPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage {
        try base.claimPending(
            notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now,
            after: after, limit: limit)
    }
    func forEachDelivery(notificationId: String, _ body: (DeliveryRecord) throws -> Void) throws {
        try base.forEachDelivery(notificationId: notificationId, body)
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
    func notification(id: String) throws -> StoredNotification? {
        notificationReads.withLock { $0 += 1 }
        return try base.notification(id: id)
    }
    func deliveries(notificationId: String) throws -> [DeliveryRecord] {
        try base.deliveries(notificationId: notificationId)
    }
    func claimPending(notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date) throws
        -> [DeliveryRecord]
    {
        try base.claimPending(
            notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now)
    }
    func claimDue(owner: String, until: Date, now: Date, limit: Int) throws -> [DeliveryRecord] {
        try base.claimDue(owner: owner, until: until, now: now, limit: limit)
    }
    func suppress(deliveryIds: [String], reason: String, now: Date) throws {
        try base.suppress(deliveryIds: deliveryIds, reason: reason, now: now)
    }
    func notificationsWithPendingDeliveries(now: Date) throws -> [String] {
        try base.notificationsWithPendingDeliveries(now: now)
    }
    func releaseLeases(ownedBy owners: [String]) throws { try base.releaseLeases(ownedBy: owners) }
    func renewLeases(owner: String, deliveryIds: [String], until: Date) throws {
        let delay = renewalDelay.withLock { $0 }
        renewalLog.withLock { $0.append("renew started") }
        if let delay { Thread.sleep(forTimeInterval: delay) }
        try base.renewLeases(owner: owner, deliveryIds: deliveryIds, until: until)
        renewalLog.withLock { $0.append("renew ended") }
    }

    /// How long each `renewLeases` takes on top of the store's own time (nil: no delay).
    let renewalDelay = Locked<TimeInterval?>(nil)
    /// "renew started" / "renew ended" per `renewLeases` call, and what a test appends between them.
    let renewalLog = Locked<[String]>([])
    func leaseOwners() throws -> [String] { try base.leaseOwners() }
    func nextDueTime() throws -> Date? { try base.nextDueTime() }
    func deliveryCounts() throws -> [DeliveryState: Int] { try base.deliveryCounts() }
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

@Suite struct RecordFailureStopsTheRunTests {
    /// Two due retries on different channels: the first group's results cannot be recorded, so
    /// the drain throws and the second group is not sent.
    @Test func aFailedRecordStopsTheDrain() async throws {
        let path = Harness.tempPath()
        let store = try RecordRefusingStore(path: path)
        let apns = RecordingChannel()
        let fcm = RecordingChannel()
        let registry = try ChannelRegistry([
            apns.factory(type: "rec-apns", platforms: ["ios"]), fcm.factory(type: "rec-fcm", platforms: ["phone"]),
        ])
        let config = try ConfigLoader.parse(
            """
            version: 1
            store: { path: \(path) }
            channels:
              apns: { type: rec-apns, retry: { attempts: 5, initial: 10s, max: 1m } }
              fcm: { type: rec-fcm, retry: { attempts: 5, initial: 10s, max: 1m } }
            routes:
              default:
                - deliver: [apns, fcm]
            """, registry: registry)
        let clock = ManualClock()
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(clock: clock, random: FixedRandom(), logSink: RecordingLogSink(), store: store))
        try await router.register(
            Device(deviceId: "mac", platform: "ios", fields: ["token": .string(String(repeating: "ab", count: 32))]))
        try await router.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "fcm-pixel"]))
        apns.answer { t, _ in .retry(t, status: 503, reason: "busy") }
        fcm.answer { t, _ in .retry(t, status: 503, reason: "busy") }
        for id in ["n-a", "n-b", "n-c"] { _ = try await router.send(HeraldNotification(id: id, title: "t")) }
        #expect(apns.targets.count == 3 && fcm.targets.count == 3)

        store.refuseRecords()
        clock.advance(by: .seconds(3600))
        await #expect(throws: StoreError.writeFailed(operation: "record delivery results", detail: "disk full (test)"))
        {
            try await router.drain()
        }
        // Channels run side by side, two groups each: the four groups in flight were attempted (their
        // results could not be recorded); no group started after that (the third of each channel).
        #expect(apns.targets.count + fcm.targets.count == 6 + 4)
        // A send whose first results cannot be recorded fails instead of reporting success.
        await #expect(throws: StoreError.self) { try await router.send(HeraldNotification(id: "n-d", title: "t")) }
        await router.shutdown()
        store.base.close()
    }
}
