import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Router
import Testing

/// Relay history and the console's relay section (docs/relay-server.md, "History and metrics";
/// docs/console.md, "Relay traffic"): every answered relay request is one record in the store with
/// its time, protocol, route template, status, pushes by outcome and caller, and nothing of its
/// content; `GET /v1/relays` counts them per protocol and lists the newest.
@Suite(.serialized, .stopsFakeHTTPServers) struct RelayTrafficTests {
    static let envelope = Base64.encode(Array(repeating: 7, count: 60))

    @Test func historyHasNoContentAndTheConsoleShowsIt() async throws {
        let relays = "        hapi: { channel: apns }"
        try await RelayRig.with(relays: relays, withHub: false) { rig in
            try await rig.apnsAnswers(200)
            let body = """
                {"platform":"ios","token":"\(RelayRig.token)","envelope":"\(Self.envelope)","collapseId":"secret-collapse"}
                """
            func push(_ token: String?) async throws -> RawResponse {
                try await RawHTTP.request(port: rig.server.port, "POST", "/v1/push", token: token, json: body)
            }
            #expect(try await push(RelayRig.relayToken).status == 200)
            #expect(try await push(nil).status == 401)
            #expect(try await push("hrd_not-a-token").status == 401)

            let traffic = try await RawHTTP.request(
                port: rig.server.port, "GET", "/v1/relays", token: RelayRig.readToken)
            #expect(traffic.status == 200)
            let json = try JSONValue.parse(traffic.body)
            let hapi = try #require(json["relays"]?.arrayValue?.first)
            #expect(hapi["protocol"] == "hapi")
            #expect(hapi["routes"] == ["POST /v1/push"])
            #expect(hapi["requests"] == ["200": 1, "401": 2])
            #expect(hapi["pushes"] == ["delivered": 1])
            #expect(hapi["recent"]?.arrayValue?.count == 3)
            #expect(hapi["recent"]?.arrayValue?.last?["caller"] == "token:hub")

            // The stored records, field by field: no body, device token, envelope, bearer token or address.
            let stored = try rig.relay.store.relayRequests(relay: nil, limit: 10)
            #expect(stored.map(\.status) == [401, 401, 200])
            #expect(stored.map(\.route) == ["/v1/push", "/v1/push", "/v1/push"])
            #expect(stored.map(\.relay) == ["hapi", "hapi", "hapi"])
            #expect(stored.map(\.pushes) == [[:], [:], ["delivered": 1]])
            #expect(stored[2].caller == "token:hub")
            #expect(stored[0].caller.hasPrefix("address:") && stored[0].caller.count == "address:".count + 16)
            #expect(!stored[0].caller.contains("127.0.0.1"))
            let text = traffic.text + stored.map { "\($0)" }.joined() + rig.relayLog.text
            for secret in [RelayRig.token, Self.envelope, "secret-collapse", RelayRig.relayToken, "hrd_not-a-token"] {
                #expect(!text.contains(secret))
            }

            // Relay traffic belongs to no namespace: a token without read, or limited to namespaces, is refused.
            let noRead = try await RawHTTP.request(
                port: rig.server.port, "GET", "/v1/relays", token: RelayRig.relayToken)
            #expect(noRead.status == 403)
            let metrics = try await RawHTTP.request(port: rig.server.port, "GET", "/metrics")
            #expect(metrics.text.contains(#"herald_relay_requests_total{protocol="hapi",code="401"} 2"#))
            #expect(metrics.text.contains(#"herald_relay_pushes_total{protocol="hapi",outcome="delivered"} 1"#))
        }
    }
}
