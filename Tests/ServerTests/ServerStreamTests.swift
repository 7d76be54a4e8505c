import Foundation
import Router
import Testing

/// Issue 17: the event stream (http-api.md §4): replay from `Last-Event-ID` or `since=`, then live;
/// every event exactly once and in order across a disconnect; only the token's namespaces.
@Suite struct ServerStreamTests {
    static func send(_ h: ServerHarness, _ id: String, namespace: String = "default") async throws {
        let r = try await h.request(
            "POST", "/v1/notifications", json: ServerAPITests.notification(id, namespace: namespace))
        #expect(r.status == 200, "\(r.text)")
    }

    static func ids(_ events: [SSEClient.Event]) -> [Int64] { events.compactMap(\.id) }

    @Test func disconnectSendMoreAndResumeWithLastEventID() async throws {
        try await withServer { h in
            try await h.registerPhone("p1")
            let first = try await SSEClient.open(port: h.port, path: "/v1/events", token: ServerHarness.admin)
            #expect(first.head.status == 200)
            _ = try await first.read(until: { $0.contains { $0.event == "comment" } })
            try await Self.send(h, "s-1")
            // s-1: notification + fcm + hook deliveries.
            let seen = try await first.read(until: { Self.ids($0).count >= 3 })
            let seenIds = Self.ids(seen)
            first.close()
            // Sent while nobody listens.
            try await Self.send(h, "s-2")
            try await Self.send(h, "s-3")
            let last = try #require(seenIds.last)
            let second = try await SSEClient.open(
                port: h.port, path: "/v1/events", token: ServerHarness.admin, lastEventID: last)
            let resumed = try await second.read(until: { Self.ids($0).count >= 6 })
            try await Self.send(h, "s-4")
            let live = try await second.read(until: { Self.ids($0).count >= 3 })
            second.close()
            let all = seenIds + Self.ids(resumed) + Self.ids(live)
            // Exactly once, in order, and exactly what the store logged.
            #expect(all == all.sorted())
            #expect(Set(all).count == all.count)
            let logged = try h.router.store.eventLog(after: 0, namespaces: ["default"], limit: 100).map(\.sequence)
            #expect(all == logged)
            let kinds = (seen + resumed + live).filter { $0.id != nil }.map(\.event)
            #expect(kinds.filter { $0 == "notification" }.count == 4)
            #expect(kinds.filter { $0 == "delivery" }.count == 8)
            let data = try #require(resumed.first { $0.event == "notification" }?.data)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
            #expect(object["notificationId"] as? String == "s-2")
            #expect(object["planned"] as? Int == 2)
        }
    }

    @Test func sinceReplaysAndNamespacesAreFiltered() async throws {
        try await withServer { h in
            try await Self.send(h, "f-1")
            try await Self.send(h, "f-2", namespace: "team-a")
            let otherResponse = try await h.request(
                "POST", "/v1/notifications", token: ServerHarness.other,
                json: ServerAPITests.notification("f-3", namespace: "other"))
            #expect(otherResponse.status == 200)
            // The admin token (default, team-*) sees f-1 and f-2, never f-3.
            let admin = try await SSEClient.open(port: h.port, path: "/v1/events?since=0", token: ServerHarness.admin)
            let a = try await admin.read(until: { $0.filter { $0.event == "notification" }.count >= 2 })
            admin.close()
            #expect(a.filter { $0.event == "notification" }.allSatisfy { !$0.data.contains("f-3") })
            // The other token sees only f-3; asking for a namespace it does not cover is 403.
            let other = try await SSEClient.open(port: h.port, path: "/v1/events?since=0", token: ServerHarness.other)
            let o = try await other.read(until: { $0.contains { $0.event == "notification" } })
            other.close()
            #expect(o.filter { $0.event == "notification" }.map(\.data).allSatisfy { $0.contains("f-3") })
            let denied = try await h.request("GET", "/v1/events?namespace=default", token: ServerHarness.other)
            #expect(denied.status == 403)
            // A lifecycle event arrives with its kind.
            let live = try await SSEClient.open(port: h.port, path: "/v1/events", token: ServerHarness.admin)
            _ = try await live.read(until: { $0.contains { $0.event == "comment" } })
            let posted = try await h.request(
                "POST", "/v1/notifications/f-1/events", json: #"{"kind":"action","action":"approve","deviceId":"p"}"#)
            #expect(posted.status == 201)
            let action = try await live.read(until: { $0.contains { $0.event == "action" } })
            live.close()
            let data = try #require(action.first { $0.event == "action" }?.data)
            #expect(data == #"{"action":"approve","deviceId":"p","kind":"action","notificationId":"f-1"}"#)
        }
    }

    @Test func keepaliveComments() async throws {
        try await withServer { h in
            let s = try await SSEClient.open(port: h.port, path: "/v1/events", token: ServerHarness.admin)
            let events = try await s.read(until: { $0.filter { $0.data == "keepalive" }.count >= 2 })
            s.close()
            #expect(events.filter { $0.data == "keepalive" }.count >= 2)
        }
    }
}
