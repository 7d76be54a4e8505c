import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Issue 33's scale-out with real processes: two `herald serve` children on one PostgreSQL, one
/// fake APNs, and a site's pushes alternating between them. The update interval per ref, the
/// hourly pushes and starts, the start interval per ref, the replay window and the revision order
/// hold across both, whichever process takes a push.
///
/// The children run on the wall clock, so the intervals under test are an hour (`update-interval:
/// 1h`, `start-interval: 1h`) and the hourly limits small: the second push of a pair is inside its
/// interval however slow the machine is, and the test asserts codes in order, never durations.
@Suite(.serialized, .stopsFakeHTTPServers) struct PulseRelayProcessesTests {
    static let limits =
        "update-interval: 1h, start-interval: 1h, pushes-per-hour: 4, starts-per-hour: 2"

    /// An activity token per ref (hex), so the APNs requests say which ref they were for.
    static func token(_ ref: String) -> String { Hex.encode(SHA256.hash(Array(ref.utf8))) }

    static func update(_ ref: String, _ revision: Int64, _ event: String = "update") -> JSONValue {
        PulseRelayRig.body(event, ref: ref, revision: revision)
    }

    @Test func limitsAndRevisionsHoldAcrossTwoServeProcesses() async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        try await RelayRig.processes(relays: try PulseRelayRig.relays(extra: Self.limits), url: url) { one, two, apns in
            try await RelayRig.apnsAnswers(apns, 200)
            try await Self.exercise(PulseRelayRig(port: one.port), PulseRelayRig(port: two.port), apns)
        }
    }

    static func exercise(_ a: PulseRelayRig, _ b: PulseRelayRig, _ apns: FakeHTTPServer) async throws {
        // The app's calls go to either process: a phone registered through a, keys minted through b.
        let phone = try await a.register()
        let u = try await b.mint(phone, name: "Updates")
        let h = try await a.mint(phone, name: "Hourly")
        let s = try await b.mint(phone, name: "Starts")
        for ref in ["r1", "r2"] { #expect(try await a.activity(phone, u, ref: ref, token: token(ref)) == 200) }
        for ref in ["h1", "h2", "h3", "h4", "h5"] {
            #expect(try await b.activity(phone, h, ref: ref, token: token(ref)) == 200)
        }

        // One update per interval per ref, whichever process takes the second.
        #expect(try await a.push(u, update("r1", 10)).status == 200)
        let second = try await b.push(u, update("r1", 11))
        #expect(second.status == 429, "\(second.text)")
        #expect(second.headers["retry-after"] != nil)
        #expect(try await b.push(u, update("r2", 1)).status == 200)
        #expect(try await a.push(u, update("r2", 2)).status == 429)

        // Revisions: what one process accepted is stale on the other; an end (not interval-bound)
        // with a higher revision goes through on either.
        #expect(try await b.push(u, update("r1", 10)).status == 409)
        #expect(try await b.push(u, update("r1", 9)).status == 409)
        #expect(try await a.push(u, update("r2", 1)).status == 409)
        #expect(try await b.push(u, update("r1", 10, "end")).status == 409)
        #expect(try await b.push(u, update("r1", 12, "end")).status == 200)
        #expect(try await a.push(u, update("r2", 3, "end")).status == 200)

        // A requestId used on one process is a replay on the other.
        let rid = UUID().uuidString.lowercased()
        #expect(try await a.push(h, update("h1", 1), requestId: rid).status == 200)
        #expect(try await b.push(h, update("h2", 1), requestId: rid).status == 409)
        // The hourly pushes (4) count both processes' pushes.
        #expect(try await b.push(h, update("h2", 1)).status == 200)
        #expect(try await a.push(h, update("h3", 1)).status == 200)
        #expect(try await b.push(h, update("h4", 1)).status == 200)
        for relay in [a, b] {
            let over = try await relay.push(h, update("h5", 1))
            #expect(over.status == 429, "\(over.text)")
            #expect(over.headers["retry-after"] != nil)
        }

        // Starts: one per ref per interval and two an hour, across both.
        #expect(try await a.push(s, update("s1", 1, "start")).status == 200)
        #expect(try await b.push(s, update("s1", 2, "start")).status == 429)
        #expect(try await b.push(s, update("s2", 1, "start")).status == 200)
        let third = try await a.push(s, update("s3", 1, "start"))
        #expect(third.status == 429, "\(third.text)")

        // Only what was accepted reached APNs, each ref's revisions strictly increasing.
        let sent = try await apns.requests()
        #expect(sent.count == 10)
        func revisions(_ ref: String) -> [Int] {
            sent.filter { $0.path == "/3/device/" + token(ref) }.compactMap {
                try? JSONValue.parse($0.body)["aps"]?["content-state"]?["revision"]?.intValue
            }
        }
        #expect(revisions("r1") == [10, 12])
        #expect(revisions("r2") == [1, 3])
        #expect(sent.filter { $0.path == "/3/device/" + PulseRelayRig.startToken }.count == 2)
    }
}
