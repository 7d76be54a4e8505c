import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Two relay Heralds on one PostgreSQL share one binding table and one replay window
/// (docs/relay-server.md): a token bound through one is bound elsewhere for the other, and a signed send
/// used on one is a replay on the other.
@Suite(.serialized, .stopsFakeHTTPServers) struct RelayOnPostgresTests {
    @Test func twoRelaysShareBindingsAndTheReplayWindow() async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        let relays = "        openchamber: { channel: apns, auth: none }"
        try await RelayRig.pair(relays: relays, store: "{ url: \"\(url)\" }") { one, two, apns in
            try await one.apnsAnswers(200)
            let lines = try RelayRig.script(
                "openchamber_relay_client.py", [one.base, "two-relays", RelayRig.token, two.base])
            var byStep: [String: Int] = [:]
            for l in lines { if let s = l["step"]?.stringValue { byStep[s] = l["status"]?.intValue } }
            #expect(byStep["register-a-on-1"] == 200)
            #expect(byStep["register-b-on-2"] == 409, "the binding made through one relay holds on the other")
            #expect(byStep["send-on-1"] == 200)
            #expect(byStep["replayed-on-2"] == 409, "the replay window is shared")
            #expect(byStep["fresh-on-2"] == 200, "the binding is visible to the other relay")
            #expect(try await apns.requests().count == 2)
        }
    }
}
