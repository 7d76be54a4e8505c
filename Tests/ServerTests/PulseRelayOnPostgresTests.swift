import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Two Pulse relay Heralds on one PostgreSQL (docs/pulse-relay.md, "Several hosts"): a phone
/// registered through one and a key minted through the other work on both; one update per second
/// per ref and the hourly limit hold across both; revisions reach APNs strictly increasing.
@Suite(.serialized, .stopsFakeHTTPServers) struct PulseRelayOnPostgresTests {
    @Test func twoRelaysEnforceOneLimitAndOneOrder() async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        let relays = try PulseRelayRig.relays(extra: "pushes-per-hour: 5")
        try await RelayRig.pair(relays: relays, store: "{ url: \"\(url)\" }") { one, two, apns in
            try await one.apnsAnswers(200)
            let a = PulseRelayRig(rig: one)
            let b = PulseRelayRig(rig: two)
            let phone = try await a.register()
            let site = try await b.mint(phone)
            #expect(try await a.activity(phone, site, ref: "r") == 200)

            // Ten updates of one ref at once, half through each relay: exactly one goes out.
            let ports = [a.port, b.port]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 1...10 {
                    let port = ports[i % 2]
                    group.addTask {
                        try await PulseRelayRig.push(port: port, site, PulseRelayRig.body(ref: "r", revision: Int64(i)))
                            .status
                    }
                }
                var out: [Int] = []
                for try await s in group { out.append(s) }
                return out
            }
            #expect(statuses.filter { $0 == 200 }.count == 1, "\(statuses)")
            #expect(statuses.allSatisfy { [200, 409, 429].contains($0) }, "\(statuses)")

            func pause() async throws { try await Task.sleep(for: .milliseconds(1100)) }
            try await pause()
            #expect(try await b.push(site, PulseRelayRig.body(ref: "r", revision: 100)).status == 200)
            #expect(try await a.push(site, PulseRelayRig.body(ref: "r", revision: 50)).status == 409)
            try await pause()
            #expect(try await a.push(site, PulseRelayRig.body(ref: "r", revision: 101)).status == 200)
            try await pause()
            #expect(try await b.push(site, PulseRelayRig.body(ref: "r", revision: 102)).status == 200)
            try await pause()
            #expect(try await a.push(site, PulseRelayRig.body(ref: "r", revision: 103)).status == 200)
            try await pause()
            let sixth = try await b.push(site, PulseRelayRig.body(ref: "r", revision: 104))
            #expect(sixth.status == 429, "the hourly limit counts the pushes of both relays")
            #expect(sixth.headers["retry-after"] != nil)

            let revisions = try await apns.requests().compactMap {
                try? JSONValue.parse($0.body)["aps"]?["content-state"]?["revision"]?.intValue
            }
            #expect(revisions.count == 5)
            #expect(zip(revisions, revisions.dropFirst()).allSatisfy { $0 < $1 }, "\(revisions)")
            #expect(Array(revisions.suffix(4)) == [100, 101, 102, 103])
        }
    }
}
