import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// `Router.enqueue(batch:)` (group commit) stores what `enqueue` one by one stores: the same plans,
/// cooldowns, badge tags and event-log entries; a repeated or stored id fails alone.
@Suite struct AcceptBatchTests {
    static let routes = "routes:\n  default:\n    - deliver: [fcm]\n      cooldown: 5s\n"

    static func notifications() -> [HeraldNotification] {
        [
            HeraldNotification(id: "a", type: "ready", title: "a", data: ["sessionId": "s1"]),
            HeraldNotification(id: "b", type: "ready", title: "b", data: ["sessionId": "s1"]),  // cooled down
            HeraldNotification(id: "c", type: "ready", title: "c", data: ["sessionId": "s2"]),
            HeraldNotification(id: "d", title: "d"),
        ]
    }

    /// What a store holds after the notifications, comparable across two stores: per notification
    /// its deliveries (channel, device, state, reason), the event log's kinds and data, the badge tags.
    static func stored(_ h: Harness, _ ids: [String]) throws -> [String] {
        var out: [String] = []
        for id in ids {
            for d in try h.router.store.deliveries(notificationId: id) {
                out.append("\(id) \(d.channel) \(d.deviceId ?? "-") \(d.state.rawValue) \(d.reason ?? "-")")
            }
        }
        for e in try h.router.store.eventLog(after: 0, namespaces: nil, limit: 100) {
            out.append("event \(e.kind) \(e.data.canonicalString)")
        }
        out.append("badge tags \(try h.router.store.pendingTagCount(namespace: "default"))")
        return out
    }

    @Test(arguments: StoreKind.allCases) func aBatchStoresWhatEnqueueOneByOneStores(store kind: StoreKind) async throws
    {
        let single = try await Harness.make(routes: Self.routes, store: kind)
        let batched = try await Harness.make(routes: Self.routes, store: kind)
        for h in [single, batched] { try await h.register("phone", "pixel") }
        let ns = Self.notifications()
        let plans = try ns.map { try single.router.enqueue($0) }
        let results = batched.router.enqueue(batch: ns + [ns[0]])
        #expect(results.count == 5)
        for (plan, result) in zip(plans, results) {
            let got = try result.get()
            #expect(got == plan.deliveryCountIncludingSuppressed)
        }
        #expect(throws: StoreError.duplicateNotification("a")) { try results[4].get() }
        let ids = ns.map(\.id)
        let expected = try Self.stored(single, ids)
        #expect(try Self.stored(batched, ids) == expected)
        // The cooldown held b back in both.
        #expect(expected.contains { $0.hasPrefix("b fcm pixel suppressed cooldown") })
    }

    /// An id already stored is refused before its cooldown is touched: resending it after the window
    /// must not start a new window that holds back the next notification of that tag.
    @Test func aStoredIdNeverTouchesACooldown() async throws {
        let h = try await Harness.make(routes: Self.routes)
        try await h.register("phone", "pixel")
        let a = HeraldNotification(id: "a", type: "ready", title: "a", data: ["sessionId": "s1"])
        _ = try h.router.enqueue(a)
        h.clock.advance(by: .seconds(6))
        let next = HeraldNotification(id: "e", type: "ready", title: "e", data: ["sessionId": "s1"])
        let results = h.router.enqueue(batch: [a, next])
        #expect(throws: StoreError.duplicateNotification("a")) { try results[0].get() }
        _ = try results[1].get()
        #expect(try h.router.store.deliveries(notificationId: "e").map(\.state) == [.pending])
    }
}
