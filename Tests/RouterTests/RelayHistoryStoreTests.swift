import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// The relay history on every ``HeraldStore`` (SQLite and PostgreSQL): records come back newest
/// first with exactly the fields written, the newest `keep` are kept, and the tallies count requests
/// and pushes per protocol and status.
@Suite struct RelayHistoryStoreTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func record(_ i: Int, relay: String = "hapi", status: Int = 200, pushes: [String: Int] = ["delivered": 1])
        -> RelayRequestRecord
    {
        RelayRequestRecord(
            at: t0.addingTimeInterval(Double(i)), relay: relay, route: "/v1/push", status: status, pushes: pushes,
            caller: "token:hub")
    }

    @Test(arguments: StoreKind.allCases) func recordsReadBackNewestFirst(store kind: StoreKind) throws {
        let store = try kind.open()
        let oc = RelayRequestRecord(
            at: Self.t0, relay: "openchamber", route: "/v1/push/send", status: 200,
            pushes: ["delivered": 98, "dead": 2], caller: "address:0123456789abcdef")
        try store.recordRelayRequests([Self.record(1), oc, Self.record(2, status: 429, pushes: [:])], keep: 100)
        let all = try store.relayRequests(relay: nil, limit: 10)
        #expect(all.map(\.status) == [429, 200, 200])
        #expect(all[1] == oc, "every field back as written")
        #expect(all[0].pushes.isEmpty)
        #expect(try store.relayRequests(relay: "openchamber", limit: 10) == [oc])
        #expect(try store.relayRequests(relay: nil, limit: 1).count == 1)
    }

    @Test(arguments: StoreKind.allCases) func onlyTheNewestAreKept(store kind: StoreKind) throws {
        let store = try kind.open()
        try store.recordRelayRequests((0..<7).map { Self.record($0) }, keep: 5)
        try store.recordRelayRequests([Self.record(7), Self.record(8)], keep: 5)
        let kept = try store.relayRequests(relay: nil, limit: 100)
        #expect(kept.map(\.at) == (4...8).reversed().map { Self.t0.addingTimeInterval(Double($0)) })
    }

    @Test(arguments: StoreKind.allCases) func talliesCountRequestsAndPushes(store kind: StoreKind) throws {
        let store = try kind.open()
        try store.recordRelayRequests(
            [
                Self.record(0), Self.record(1), Self.record(2, pushes: ["dead": 1]),
                Self.record(3, status: 429, pushes: [:]),
                Self.record(4, relay: "openchamber", pushes: ["delivered": 99, "dead": 1]),
            ], keep: 100)
        #expect(
            try store.relayRequestTallies() == [
                RelayRequestTally(relay: "hapi", status: 200, requests: 3, pushes: ["delivered": 2, "dead": 1]),
                RelayRequestTally(relay: "hapi", status: 429, requests: 1, pushes: [:]),
                RelayRequestTally(
                    relay: "openchamber", status: 200, requests: 1, pushes: ["delivered": 99, "dead": 1]),
            ])
    }
}
