import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// The stores' batch writes for group commit (``HeraldStore/insertNotifications(_:now:)``,
/// ``HeraldStore/upsertDevicesIndividually(_:now:)``) on SQLite and PostgreSQL: each item stored
/// or refused on its own, a refused item leaving no row and no event-log entry behind.
@Suite struct GroupCommitStoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let all = [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)]

    static func item(_ id: String, rows: Int, suppressed: Int = 0, rowPrefix: String? = nil) -> NotificationInsert {
        let n = HeraldNotification(id: id, title: "t")
        let deliveries = (0..<(rows + suppressed)).map { i in
            DeliveryRecord(
                id: "\(rowPrefix ?? id)-\(i)", notificationId: id, step: 0, position: 0, channel: "sink", deviceId: nil,
                platform: nil, state: i < rows ? .pending : .suppressed, reason: i < rows ? nil : "quiet",
                updatedAt: t0)
        }
        return NotificationInsert(notification: n, steps: all, deliveries: deliveries)
    }

    @Test(arguments: StoreKind.allCases) func eachNotificationOfABatchIsStoredOrRefusedAlone(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        try store.insertNotification(
            HeraldNotification(id: "old", title: "t"), steps: Self.all,
            deliveries: Self.item("old", rows: 1).deliveries,
            now: Self.t0)
        let before = try store.lastEventSequence()
        var suppressed: [String] = []
        let results = try store.insertNotifications(
            [
                Self.item("a", rows: 2, suppressed: 1),
                Self.item("old", rows: 1, rowPrefix: "old-again"),  // already stored
                Self.item("a", rows: 1, rowPrefix: "a-again"),  // a duplicate inside the batch
                // Its notification row goes in, then a delivery id already taken fails it: the
                // notification row must not stay.
                Self.item("c", rows: 2, rowPrefix: "a"),
                Self.item("b", rows: 1),
            ], now: Self.t0
        ) { suppressed.append($0.id) }
        #expect(results.count == 5)
        #expect((try? results[0].get()) == 3)
        #expect(suppressed == ["a-2"], "only the stored items' rows suppressed at plan time")
        #expect(throws: StoreError.duplicateNotification("old")) { try results[1].get() }
        #expect(throws: StoreError.duplicateNotification("a")) { try results[2].get() }
        #expect(throws: (any Error).self) { try results[3].get() }
        #expect((try? results[4].get()) == 1)
        #expect(try store.deliveries(notificationId: "a").count == 3)
        #expect(try store.deliveries(notificationId: "old").count == 1)
        #expect(try store.notification(id: "c") == nil)
        #expect(try store.deliveries(notificationId: "c").isEmpty)
        #expect(try store.deliveries(notificationId: "b").count == 1)
        // The event log: a's `notification` and its suppressed `delivery`, then b's; nothing of the
        // refused items.
        let log = try store.eventLog(after: before, namespaces: nil, limit: 100)
        #expect(log.map(\.kind) == ["notification", "delivery", "notification"])
        #expect(log.map(\.notificationId) == ["a", "a", "b"])
        #expect(log[0].data["planned"]?.numberValue == 3)
    }

    /// A batch item given as outbox groups (what `herald serve` stores): the store expands each
    /// against the namespace's devices inside the batch, as the single insert does; a refused item
    /// leaves nothing, and only the stored items' rows suppressed at plan time are handed back.
    @Test(arguments: StoreKind.allCases) func aBatchExpandsOutboxGroupsAgainstTheDevices(store kind: StoreKind) throws {
        let store = try kind.open()
        let devices = (0..<300).map { i in
            Device(
                deviceId: String(format: "d%03d", i), platform: i % 3 == 0 ? "web" : "phone",
                fields: ["token": .string("t\(i)")])
        }
        _ = try store.upsertDevices(
            devices + [Device(namespace: "other", deviceId: "x", platform: "phone", fields: ["token": "tx"])],
            now: Self.t0)
        try store.insertNotification(
            HeraldNotification(id: "old", title: "t"), steps: Self.all, deliveries: [], now: Self.t0)
        let groups = [
            OutboxGroup(step: 0, position: 0, channel: "fcm", platforms: ["phone"], state: .pending, reason: nil),
            OutboxGroup(step: 0, position: 1, channel: "sink", platforms: nil, state: .pending, reason: nil),
            OutboxGroup(
                step: 1, position: 0, channel: "webpush", platforms: ["web"], state: .suppressed,
                reason: "unless-delivered: fcm"),
        ]
        let steps = Self.all + Self.all
        var suppressed: [DeliveryRecord] = []
        let results = try store.insertNotifications(
            ["g1", "old", "g2"].map {
                NotificationInsert(notification: HeraldNotification(id: $0, title: "t"), steps: steps, groups: groups)
            }, now: Self.t0
        ) { suppressed.append($0) }
        #expect((try? results[0].get()) == 301)
        #expect(throws: StoreError.duplicateNotification("old")) { try results[1].get() }
        #expect((try? results[2].get()) == 301)
        #expect(try store.deliveries(notificationId: "old").isEmpty)
        let keys = devices.map { (deviceId: $0.deviceId, platform: $0.platform) }
        for id in ["g1", "g2"] {
            let expected = OutboxGroup.expand(groups, notificationId: id, devices: keys, now: Self.t0)
            let rows = try store.deliveries(notificationId: id)
            #expect(rows.count == expected.count)
            for (row, e) in zip(rows, expected) {
                let same = row.step == e.step && row.position == e.position && row.channel == e.channel
                #expect(same && row.deviceId == e.deviceId && row.state == e.state && row.reason == e.reason)
            }
            #expect(Set(rows.map(\.id)).count == rows.count)
        }
        #expect(suppressed.count == 200)
        #expect(Set(suppressed.map(\.notificationId)) == ["g1", "g2"])
        #expect(suppressed.allSatisfy { $0.channel == "webpush" && $0.reason == "unless-delivered: fcm" })
    }

    @Test(arguments: StoreKind.allCases) func aBatchOfDevicesIsUpsertedInOrder(store kind: StoreKind) throws {
        let store = try kind.open()
        let a = Device(deviceId: "a", platform: "phone", fields: ["token": "T"], address: "T")
        let b = Device(deviceId: "b", platform: "phone", fields: ["token": "T"], address: "T")
        let c = Device(deviceId: "c", platform: "phone", fields: ["token": "U"], address: "U")
        let results = try store.upsertDevicesIndividually([a, b, c, c], now: Self.t0).map { try $0.get() }
        #expect(
            results == [
                UpsertResult(created: true, moved: []), UpsertResult(created: true, moved: ["default/a/phone"]),
                UpsertResult(created: true, moved: []), UpsertResult(created: false, moved: []),
            ])
        #expect(try store.devices(namespace: "default").map(\.deviceId) == ["b", "c"])
    }

    /// SQLite's one-transaction batch: a device the database refuses (here a trigger) fails alone, the
    /// others are stored, and the device cache sees them at once.
    @Test func aRefusedDeviceFailsAloneInTheSQLiteBatch() throws {
        let store = try SQLiteStore(path: Harness.tempPath())
        #expect(try store.devices(namespace: "default").isEmpty)  // fills the device cache
        try store.db.execute(
            """
            CREATE TRIGGER refuse_bad BEFORE INSERT ON devices WHEN NEW.device_id = 'bad'
            BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
            """)
        let devices = ["a", "bad", "c"].map {
            Device(deviceId: $0, platform: "phone", fields: ["token": .string("t-\($0)")], address: "t-\($0)")
        }
        let results = try store.upsertDevicesIndividually(devices, now: Self.t0)
        #expect((try? results[0].get()) == UpsertResult(created: true, moved: []))
        #expect(throws: (any Error).self) { try results[1].get() }
        #expect((try? results[2].get()) == UpsertResult(created: true, moved: []))
        #expect(try store.devices(namespace: "default").map(\.deviceId) == ["a", "c"])
    }

    /// A read-only SQLite store refuses the whole batch with the documented error; nothing is stored.
    @Test func aReadOnlySQLiteStoreRefusesTheWholeBatch() throws {
        let path = Harness.tempPath()
        _ = try SQLiteStore(path: path)
        let store = try SQLiteStore(path: path, access: .readOnly)
        #expect(throws: StoreError.self) {
            _ = try store.insertNotifications([Self.item("x", rows: 1)], now: Self.t0) { _ in }
        }
        #expect(throws: StoreError.self) {
            _ = try store.upsertDevicesIndividually(
                [Device(deviceId: "a", platform: "phone", fields: ["token": "T"], address: "T")], now: Self.t0)
        }
    }
}
