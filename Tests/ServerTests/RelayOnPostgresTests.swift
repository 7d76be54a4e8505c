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
            try RelayRig.expectSharedBindingsAndReplays(one.base, two.base)
            #expect(try await apns.requests().count == 2)
        }
    }
}
