import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Two Pulse relay Heralds on one PostgreSQL (docs/pulse-relay.md, "Several hosts"): a phone
/// registered through one and a key minted through the other work on both; the update interval per
/// ref and the hourly limit hold across both; revisions are accepted strictly increasing across both.
/// Intervals are an hour or zero, so nothing depends on how fast the machine is.
@Suite(.serialized, .stopsFakeHTTPServers) struct PulseRelayOnPostgresTests {
    /// Runs `body` with two relays on a fresh database, a phone registered through the first, a key
    /// minted through the second and activities for `refs` reported through the first.
    static func pair(
        _ extra: String, refs: [String],
        _ body: (PulseRelayRig, PulseRelayRig, PulseRelayRig.Site, FakeHTTPServer) async throws -> Void
    ) async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        try await RelayRig.pair(relays: try PulseRelayRig.relays(extra: extra), store: "{ url: \"\(url)\" }") {
            one, two, apns in
            try await one.apnsAnswers(200)
            let a = PulseRelayRig(rig: one)
            let b = PulseRelayRig(rig: two)
            let phone = try await a.register()
            let site = try await b.mint(phone)
            for ref in refs { #expect(try await a.activity(phone, site, ref: ref) == 200) }
            try await body(a, b, site, apns)
        }
    }

    /// Pushes of `revisions` to ref `r`, all at once, alternating between the two relays.
    static func burst(_ a: PulseRelayRig, _ b: PulseRelayRig, _ site: PulseRelayRig.Site, _ revisions: [Int64])
        async throws -> [Int64: Int]
    {
        let ports = [a.port, b.port]
        return try await withThrowingTaskGroup(of: (Int64, Int).self) { group in
            for (i, r) in revisions.enumerated() {
                let port = ports[i % 2]
                group.addTask {
                    (
                        r,
                        try await PulseRelayRig.push(port: port, site, PulseRelayRig.body(ref: "r", revision: r)).status
                    )
                }
            }
            var out: [Int64: Int] = [:]
            for try await (r, s) in group { out[r] = s }
            return out
        }
    }

    @Test func oneUpdateIntervalAndOneHourlyBudgetAcrossBoth() async throws {
        try await Self.pair("update-interval: 1h, pushes-per-hour: 3", refs: ["r", "r2", "r3", "r4"]) {
            a, b, site, apns in
            let statuses = try await Self.burst(a, b, site, Array(1...10))
            #expect(statuses.values.filter { $0 == 200 }.count == 1, "\(statuses)")
            #expect(statuses.values.allSatisfy { [200, 409, 429].contains($0) }, "\(statuses)")
            #expect(try await b.push(site, PulseRelayRig.body(ref: "r2", revision: 1)).status == 200)
            #expect(try await a.push(site, PulseRelayRig.body(ref: "r3", revision: 1)).status == 200)
            let fourth = try await b.push(site, PulseRelayRig.body(ref: "r4", revision: 1))
            #expect(fourth.status == 429, "the hourly budget counts the pushes of both relays")
            #expect(fourth.headers["retry-after"] != nil)
            #expect(try await apns.requests().count == 3)
        }
    }

    @Test func revisionsStrictlyIncreaseAcrossBoth() async throws {
        try await Self.pair("update-interval: 0s", refs: ["r"]) { a, b, site, apns in
            let statuses = try await Self.burst(a, b, site, (1...10).map { Int64($0) * 10 })
            // 429 and 503 are the site's "retry" for a transient answer (an APNs request that timed
            // out on a loaded machine: `make test-loaded` saw two 429s); a stale revision is never 2xx.
            #expect(statuses[100] != 409, "the highest revision is never stale: \(statuses)")
            #expect(statuses.values.allSatisfy { [200, 409, 429, 503].contains($0) }, "\(statuses)")
            #expect(statuses.values.contains(200), "\(statuses)")
            try await apns.reset()
            try await a.rig.apnsAnswers(200)
            #expect(try await b.push(site, PulseRelayRig.body(ref: "r", revision: 200)).status == 200)
            #expect(try await a.push(site, PulseRelayRig.body(ref: "r", revision: 150)).status == 409)
            #expect(try await a.push(site, PulseRelayRig.body(ref: "r", revision: 201)).status == 200)
            #expect(try await b.push(site, PulseRelayRig.body(ref: "r", revision: 201)).status == 409)
            #expect(try await b.push(site, PulseRelayRig.body(ref: "r", revision: 202)).status == 200)
            let revisions = try await apns.requests().compactMap {
                try? JSONValue.parse($0.body)["aps"]?["content-state"]?["revision"]?.intValue
            }
            #expect(revisions == [200, 201, 202])
        }
    }
}
