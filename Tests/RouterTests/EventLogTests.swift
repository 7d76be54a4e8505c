import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// Issue 17: the store's event log (what `GET /v1/events` streams) is written in the transactions of
/// the changes it reports, in commit order, filtered by namespace, and purged with its notification.
@Suite struct EventLogTests {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func notification(_ id: String, namespace: String = "default") throws -> HeraldNotification {
        try HeraldNotification(json: ["id": .string(id), "namespace": .string(namespace), "title": "t"])
    }

    static func row(
        _ id: String, _ nid: String, device: String? = "d1", state: DeliveryState = .pending, reason: String? = nil
    )
        -> DeliveryRecord
    {
        DeliveryRecord(
            id: id, notificationId: nid, step: 0, position: 0, channel: "fcm", deviceId: device,
            platform: device == nil ? nil : "phone", state: state, reason: reason, updatedAt: t0)
    }

    @Test func everyWriteAppendsItsEntriesInOrder() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        #expect(try store.lastEventSequence() == 0)
        try store.insertNotification(
            try Self.notification("n1"), steps: [],
            deliveries: [
                Self.row("a", "n1"), Self.row("b", "n1", device: nil),
                Self.row("c", "n1", state: .suppressed, reason: "cooldown"),
            ], now: Self.t0)
        _ = try store.record(
            [AttemptRecord(deliveryId: "a", attempt: 1, state: .delivered, status: 200)], now: Self.t0)
        try store.suppress(deliveryIds: ["b"], reason: "unless-delivered: fcm", now: Self.t0)
        // Suppressing a row that is no longer pending changes nothing and logs nothing.
        try store.suppress(deliveryIds: ["a"], reason: "late", now: Self.t0)
        _ = try store.recordEvent(
            LifecycleEvent(
                event: ChannelEvent(
                    notificationId: "n1", kind: .action, actionId: "approve", actionData: ["k": "v"], deviceId: "d1"),
                at: Self.t0))
        let log = try store.eventLog(after: 0, namespaces: nil, limit: 100)
        #expect(log.map(\.kind) == ["notification", "delivery", "delivery", "delivery", "action"])
        #expect(log.map(\.sequence) == log.map(\.sequence).sorted())
        #expect(Set(log.map(\.sequence)).count == log.count)
        #expect(log.allSatisfy { $0.namespace == "default" && $0.notificationId == "n1" })
        #expect(log[0].data == ["notificationId": "n1", "namespace": "default", "planned": 3])
        #expect(
            log[1].data == [
                "notificationId": "n1", "channel": "fcm", "deviceId": "d1", "outcome": "suppressed", "attempt": 0,
                "reason": "cooldown",
            ])
        #expect(
            log[2].data == [
                "notificationId": "n1", "channel": "fcm", "deviceId": "d1", "outcome": "delivered", "attempt": 1,
            ])
        // A sink delivery has no deviceId.
        #expect(
            log[3].data == [
                "notificationId": "n1", "channel": "fcm", "outcome": "suppressed", "attempt": 0,
                "reason": "unless-delivered: fcm",
            ])
        #expect(
            log[4].data == [
                "notificationId": "n1", "kind": "action", "action": "approve", "deviceId": "d1", "data": ["k": "v"],
            ])
        #expect(try store.lastEventSequence() == log.last?.sequence)
        // Paging: after and limit.
        #expect(
            try store.eventLog(after: log[1].sequence, namespaces: nil, limit: 2).map(\.sequence) == [
                log[2].sequence, log[3].sequence,
            ])
    }

    @Test func namespacesFilterTheLog() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        for (id, ns) in [("x1", "alpha"), ("x2", "beta"), ("x3", "alpha"), ("x4", "gamma")] {
            try store.insertNotification(
                try Self.notification(id, namespace: ns), steps: [], deliveries: [], now: Self.t0)
        }
        #expect(try store.eventLog(after: 0, namespaces: ["alpha"], limit: 10).map(\.notificationId) == ["x1", "x3"])
        #expect(
            try store.eventLog(after: 0, namespaces: ["gamma", "beta"], limit: 10).map(\.notificationId) == [
                "x2", "x4",
            ])
        #expect(try store.eventLog(after: 0, namespaces: [], limit: 10).isEmpty)
        #expect(try store.eventLog(after: 0, namespaces: nil, limit: 10).count == 4)
    }

    /// A failed write (a duplicate id, an unknown notification) leaves no entry behind.
    @Test func aFailedWriteLogsNothing() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        try store.insertNotification(try Self.notification("n1"), steps: [], deliveries: [], now: Self.t0)
        #expect(throws: StoreError.duplicateNotification("n1")) {
            try store.insertNotification(
                try Self.notification("n1"), steps: [], deliveries: [Self.row("z", "n1", state: .suppressed)],
                now: Self.t0)
        }
        #expect(throws: StoreError.unknownNotification("nope")) {
            _ = try store.recordEvent(
                LifecycleEvent(event: ChannelEvent(notificationId: "nope", kind: .tapped), at: Self.t0))
        }
        #expect(try store.eventLog(after: 0, namespaces: nil, limit: 10).map(\.kind) == ["notification"])
    }

    @Test func purgeRemovesANotificationsEntries() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        try store.insertNotification(try Self.notification("old"), steps: [], deliveries: [], now: Self.t0)
        _ = try store.recordEvent(
            LifecycleEvent(event: ChannelEvent(notificationId: "old", kind: .tapped), at: Self.t0))
        try store.insertNotification(
            try Self.notification("new"), steps: [], deliveries: [], now: Self.t0.addingTimeInterval(100))
        #expect(try store.purge(before: Self.t0.addingTimeInterval(50)) == 1)
        let left = try store.eventLog(after: 0, namespaces: nil, limit: 10)
        #expect(left.map(\.notificationId) == ["new"])
        // The sequence never goes back after a purge (AUTOINCREMENT).
        try store.insertNotification(
            try Self.notification("newer"), steps: [], deliveries: [], now: Self.t0.addingTimeInterval(200))
        #expect(try store.lastEventSequence() == 4)
    }

    /// A router's send writes the notification entry and one delivery entry per attempt result.
    @Test func aSendThroughTheRouterIsLogged() async throws {
        let h = try await Harness.make(routes: "routes:\n  default:\n    - deliver: [fcm]\n")
        defer { Task { await h.router.shutdown() } }
        try await h.register("phone", "p1")
        let report = try await h.router.send(HeraldNotification(title: "hi"))
        let log = try h.router.store.eventLog(after: 0, namespaces: ["default"], limit: 10)
        #expect(log.map(\.kind) == ["notification", "delivery"])
        #expect(log.allSatisfy { $0.notificationId == report.id })
        #expect(log[1].data["outcome"] == .string(report.deliveries.first?.state.reportOutcome ?? "?"))
    }
}
