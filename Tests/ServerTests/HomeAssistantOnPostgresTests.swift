import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Two Home Assistant forwarders on one PostgreSQL enforce one per-token daily limit
/// (docs/relay-server.md): pushes through either count against the same token's counters.
@Suite(.serialized, .stopsFakeHTTPServers) struct HomeAssistantOnPostgresTests {
    @Test func twoForwardersShareOneDailyLimit() async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        let relays = """
                    home-assistant: { channel: apns, auth: none, daily-limit: 3 }
            """
        try await RelayRig.pair(relays: relays, store: "{ url: \"\(url)\" }") { one, two, apns in
            try await one.apnsAnswers(200)
            try RelayRig.expectSharedDailyLimit(one.base, two.base)
            #expect(try await apns.requests().count == 3)
        }
    }
}
