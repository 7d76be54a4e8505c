import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// `forEachDelivery` reads a notification's deliveries page by page on every store, in the order
/// of `deliveries(notificationId:)`, every row once, and none of another notification's.
@Suite struct StorePagingTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// The rows of `n` in the order the planner writes them: step, position, device, platform. A
    /// sink row (no device) sits between two device channels.
    static func plannedRows(_ n: HeraldNotification) -> [DeliveryRecord] {
        var rows: [DeliveryRecord] = []
        func add(step: Int, position: Int, channel: String, device: String?, platform: String?) {
            rows.append(
                DeliveryRecord(
                    id: "\(n.id)-\(rows.count)", notificationId: n.id, step: step, position: position,
                    channel: channel, deviceId: device, platform: platform, state: .pending, updatedAt: t0))
        }
        for d in 0..<1_000 {
            for p in ["phone", "web"] {
                add(step: 0, position: 0, channel: "apns", device: String(format: "d%04d", d), platform: p)
            }
        }
        add(step: 0, position: 1, channel: "sink", device: nil, platform: nil)
        for d in 0..<600 {
            add(step: 1, position: 0, channel: "fcm", device: String(format: "d%04d", d), platform: "phone")
        }
        return rows
    }

    @Test(arguments: StoreKind.allCases) func forEachDeliveryReadsEveryRowInOrderAcrossPages(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        let n = HeraldNotification(id: "paged", title: "t")
        let rows = Self.plannedRows(n)
        // More rows than two pages of either store (1,000 each), and not a whole number of pages.
        #expect(rows.count == 2_601)
        try store.insertNotification(n, steps: [], deliveries: rows, now: Self.t0)
        let other = HeraldNotification(id: "other", title: "t")
        try store.insertNotification(other, steps: [], deliveries: Self.plannedRows(other), now: Self.t0)

        var streamed: [DeliveryRecord] = []
        try store.forEachDelivery(notificationId: "paged") { streamed.append($0) }
        #expect(streamed.count == rows.count)
        #expect(Set(streamed.map(\.id)).count == rows.count)
        #expect(streamed.map(\.id) == rows.map(\.id))
        #expect(streamed.map(\.id) == (try store.deliveries(notificationId: "paged")).map(\.id))
        #expect(streamed.allSatisfy { $0.notificationId == "paged" })

        var none = 0
        try store.forEachDelivery(notificationId: "missing") { _ in none += 1 }
        #expect(none == 0)
    }

    /// Exactly one page's worth: the read stops after the last row without an empty extra page
    /// going wrong, on every store.
    @Test(arguments: StoreKind.allCases) func aWholeNumberOfPagesIsReadOnce(store kind: StoreKind) throws {
        let store = try kind.open()
        let n = HeraldNotification(id: "exact", title: "t")
        let rows = Self.plannedRows(n).prefix(2_000)
        try store.insertNotification(n, steps: [], deliveries: Array(rows), now: Self.t0)
        var ids: [String] = []
        try store.forEachDelivery(notificationId: "exact") { ids.append($0.id) }
        #expect(ids == rows.map(\.id))
    }
}
