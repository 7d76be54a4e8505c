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
            func post(_ rig: RelayRig, _ count: Int) throws -> [JSONValue] {
                try RelayRig.script(
                    "ha_push_client.py",
                    [rig.base + "/api/sendPush/iOS/v1", RelayRig.token, "io.robbie.HomeAssistant", "plain", "\(count)"])
            }
            let first = try post(one, 2)
            let second = try post(two, 2)
            #expect(first.map { $0["status"] } == [201, 201])
            #expect(second.map { $0["status"] } == [201, 429], "the limit is shared")
            #expect(second[1]["body"]?["rateLimits"]?["successful"] == 3)
            #expect(try await apns.requests().count == 3)
        }
    }
}
