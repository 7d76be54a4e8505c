import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import RouterTesting
import Testing

@testable import HeraldServer

/// Two relay Heralds on one PostgreSQL enforce one rate limit per caller (docs/relay-server.md,
/// "Several processes"): requests through one take from the bucket the other takes from, and the one
/// over the limit answers 429 with `Retry-After`, whichever process gets it. The bucket is stored
/// under the hash of the caller, never its name.
@Suite(.serialized, .stopsFakeHTTPServers) struct RelayLimitsOnPostgresTests {
    @Test func twoRelaysShareOneRateLimit() async throws {
        let postgres = try TestPostgres.start()
        let url = try postgres.createDatabase()
        let relays = "        hapi: { channel: apns, rate-limit: 1/h, burst: 3 }"
        try await RelayRig.pair(relays: relays, store: "{ url: \"\(url)\" }") { one, two, apns in
            try await one.apnsAnswers(200)
            let body = """
                {"platform":"ios","token":"\(RelayRig.token)","envelope":"\(Base64.encode(Array(repeating: 7, count: 60)))"}
                """
            func push(_ rig: RelayRig) async throws -> RawResponse {
                try await RawHTTP.request(
                    port: rig.server.port, "POST", "/v1/push", token: RelayRig.relayToken, json: body)
            }
            #expect(try await push(one).status == 200)
            #expect(try await push(two).status == 200)
            #expect(try await push(one).status == 200)
            let over = try await push(two)
            #expect(over.status == 429, "the fourth request is over the burst of 3, counted across both")
            #expect(Int(over.headers["retry-after"] ?? "") ?? 0 >= 1)
            #expect(over.json?["code"] as? String == "rate_limited")
            let overOnOne = try await push(one)
            #expect(overOnOne.status == 429)
            #expect(try await apns.requests().count == 3, "nothing is sent over the limit")
            for rig in [one, two] {
                for secret in [RelayRig.token, RelayRig.relayToken] { #expect(!rig.relayLog.text.contains(secret)) }
            }
            // The bucket is in the store under the caller's hash; the caller's name is not stored.
            let area = one.relay.store.channelState("relay.limits.hapi")
            let stored = try #require(try area.value(forKey: StoredRateLimit.key("token:hub")))
            #expect(!String(decoding: stored, as: UTF8.self).contains("hub"))
            #expect(try area.value(forKey: "token:hub") == nil)
        }
    }
}
