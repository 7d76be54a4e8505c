import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// Issue 16 item 9: the store's SQL binds every value (no splicing), and the store stamps its own
/// writes with the injected clock, never `Date()`.
@Suite struct SQLiteStoreBindingTests {
    /// A moment far from the real time, so a `Date()` stamp cannot pass for it.
    static let past = Date(timeIntervalSince1970: 1_000_000_000)

    static func updatedAt(_ store: SQLiteStore, channel: String, key: String) throws -> Int64? {
        try store.db.queryOne("SELECT updated_at FROM channel_state WHERE channel = \(channel) AND key = \(key)")?
            .int("updated_at")
    }

    @Test func channelStateIsStampedByTheInjectedClock() throws {
        let clock = ManualClock(start: Self.past)
        let store = try SQLiteStore(path: ":memory:", clock: clock)
        defer { store.close() }
        let state = store.channelState("apns")
        try state.setValue([1, 2, 3], forKey: "token")
        #expect(try Self.updatedAt(store, channel: "apns", key: "token") == Self.past.millisecondsSince1970)
        clock.advance(by: .seconds(90))
        let result = try state.update("token") { old in (newValue: (old ?? []) + [4], result: old?.count) }
        #expect(result == 3)
        #expect(try state.value(forKey: "token") == [1, 2, 3, 4])
        #expect(
            try Self.updatedAt(store, channel: "apns", key: "token")
                == Self.past.adding(.seconds(90)).millisecondsSince1970)
    }

    @Test func theRoutersStoreUsesTheRoutersClock() async throws {
        let h = try await Harness.make(
            routes: "routes:\n  default:\n    - deliver: [fcm]\n", clock: ManualClock(start: Self.past))
        defer { Task { await h.router.shutdown() } }
        let store = try #require(h.router.store as? SQLiteStore)
        try store.channelState("fcm").setValue([9], forKey: "k")
        #expect(try Self.updatedAt(store, channel: "fcm", key: "k") == Self.past.millisecondsSince1970)
    }

    /// Values with quotes, semicolons and SQL go in as bound values and come back unchanged.
    @Test func hostileValuesRoundTripThroughTheStore() throws {
        let store = try SQLiteStore(path: ":memory:", clock: ManualClock(start: Self.past))
        defer { store.close() }
        let namespace = "ns'; DROP TABLE devices; --"
        let id = #"o'brien "x" \ ?"#
        let device = Device(namespace: namespace, deviceId: id, platform: "phone", fields: ["token": "t'1"])
        _ = try store.upsertDevice(device, now: Self.past)
        #expect(try store.devices(namespace: namespace) == [device])
        #expect(try store.device(namespace: namespace, deviceId: id, platform: "phone") == device)
        try store.addBadgeTag(namespace: namespace, tag: "it's", now: Self.past)
        #expect(try store.pendingTagCount(namespace: namespace) == 1)
        #expect(try store.removeDevice(namespace: namespace, deviceId: id, platform: nil) == 1)
        #expect(try store.devices(namespace: nil).isEmpty)
    }

    /// The batched outbox insert writes every column of every row (a new row has 0 attempts).
    @Test func batchedOutboxInsertWritesEveryRow() throws {
        let store = try SQLiteStore(path: ":memory:", clock: ManualClock(start: Self.past))
        defer { store.close() }
        let n = HeraldNotification(title: "fan-out")
        let deliveries = (0..<600).map { i in  // two full statements of 256 rows and one of 88
            DeliveryRecord(
                id: "d\(10_000 + i)", notificationId: n.id, step: i % 2, position: i, channel: "fcm",
                deviceId: i == 7 ? nil : "dev'\(i)", platform: "phone", state: .pending,
                reason: i == 3 ? "why'not" : nil, updatedAt: Self.past)
        }
        try store.insertNotification(n, steps: [], deliveries: deliveries, now: Self.past)
        let stored = try store.deliveries(notificationId: n.id)
        #expect(stored.count == 600)
        let byId = Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0) })
        for d in deliveries {
            let s = try #require(byId[d.id])
            #expect(s.step == d.step && s.position == d.position && s.channel == d.channel)
            #expect(s.deviceId == d.deviceId && s.platform == d.platform && s.state == .pending)
            #expect(s.reason == d.reason && s.attempts == 0 && s.updatedAt == Self.past)
        }
    }
}
