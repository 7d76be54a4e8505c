import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Issue 32's scale-out with real processes: two `herald serve` children on one PostgreSQL and one
/// fake APNs, with the hapi, openchamber and Home Assistant relays. Whichever process takes a
/// request, they enforce one rate limit per caller, one binding table, one replay window and one
/// daily limit per push token (docs/relay-server.md, "Several processes"). The in-process pairs of
/// `RelayOnPostgresTests`, `RelayLimitsOnPostgresTests` and `HomeAssistantOnPostgresTests` look
/// inside the store; this one checks what two separate processes answer.
///
/// The children run on the wall clock, so the limits under test are per hour and per day with small
/// bursts: the request over a limit is over it however slow the machine is. The test asserts codes
/// in order, never durations.
@Suite(.serialized, .stopsFakeHTTPServers) struct RelayProcessesTests {
    static let relays = """
                hapi: { channel: apns, rate-limit: 1/h, burst: 3 }
                openchamber: { channel: apns, auth: none }
                home-assistant: { channel: apns, auth: none, daily-limit: 3 }
        """

    @Test func limitsBindingsAndReplaysHoldAcrossTwoServeProcesses() async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        try await RelayRig.processes(relays: Self.relays, url: url) { one, two, apns in
            try await RelayRig.apnsAnswers(apns, 200)

            // hapi: a burst of 3 for the caller `hub`, taken from one bucket by both processes.
            let body = """
                {"platform":"ios","token":"\(RelayRig.token)","envelope":"\(Base64.encode(Array(repeating: 7, count: 60)))"}
                """
            func push(_ p: ServeProcess) async throws -> RawResponse {
                try await RawHTTP.request(port: p.port, "POST", "/v1/push", token: RelayRig.relayToken, json: body)
            }
            #expect(try await push(one).status == 200)
            #expect(try await push(two).status == 200)
            #expect(try await push(one).status == 200)
            for p in [two, one] {
                let over = try await push(p)
                #expect(over.status == 429, "over the burst of 3, counted across both: \(over.text)")
                #expect(over.headers["retry-after"] != nil)
                #expect(over.json?["code"] as? String == "rate_limited")
            }
            #expect(try await apns.requests().count == 3, "nothing is sent over the limit")

            // openchamber: a token bound through one process is bound for the other, and a signed
            // send used on one is a replay on the other.
            try RelayRig.expectSharedBindingsAndReplays(one.baseURL, two.baseURL)
            #expect(try await apns.requests().count == 5)

            // Home Assistant: one daily limit per push token, counted by both.
            try RelayRig.expectSharedDailyLimit(one.baseURL, two.baseURL)
            #expect(try await apns.requests().count == 8)
        }
    }
}
