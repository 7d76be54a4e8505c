import ChannelAPI
import Foundation
import HeraldHTTPTesting
import Router
import Testing

/// openchamber, Herald to Herald: every outcome docs/channels/relay.md lists for the protocol comes out
/// the same on the hub's side (A's `relay` channel) through the relay (B) and a fake APNs: delivered,
/// dead (`drop`), retry (`ok:false`, and any non-2xx of the relay itself). The protocol has no
/// per-token "failed": a push APNs refuses for good (413, a bad collapse id) is `ok:false` and so a
/// retry on A, as the channel documents. One APNs request per accepted request, never two.
@Suite(.serialized, .stopsFakeHTTPServers) struct OpenChamberRelayOutcomesTests {
    static let device = Device(
        namespace: "oc", deviceId: "ipad", platform: "ios", fields: ["token": .string(RelayRig.token)])

    @Test(
        arguments: [
            (200, nil, DeliveryState.delivered), (410, "Unregistered", .dead), (400, "BadDeviceToken", .dead),
            (429, "TooManyRequests", .retry), (503, "ServiceUnavailable", .retry), (413, "PayloadTooLarge", .retry),
        ] as [(Int, String?, DeliveryState)])
    func outcomesComeThroughTheRelay(status: Int, reason: String?, expected: DeliveryState) async throws {
        try await RelayRig.with(relays: RelayServeTests.relays) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(status, reason)
            _ = try await hub.register(Self.device)
            let report = try await hub.send(RelayServeTests.notification("oc"))
            #expect(report.deliveries.map(\.state) == [expected], "\(report.deliveries.map(\.reason))")
            #expect(try await rig.apns.requests().count == 1, "one delivery per accepted request, never two")
        }
    }

    /// The relay's own refusal (its per-caller limit: 429 with Retry-After) is a retry on A, and nothing
    /// reaches APNs.
    @Test func theRelaysLimitIsARetryOnTheHub() async throws {
        let relays = "        openchamber: { channel: apns, auth: none, rate-limit: 1/h, burst: 1 }"
        try await RelayRig.with(relays: relays) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(200)
            _ = try await hub.register(Self.device)  // register-token takes the one request of the burst
            let report = try await hub.send(RelayServeTests.notification("oc"))
            #expect(report.deliveries.map(\.state) == [.retry])
            #expect(report.deliveries.first?.status == 429)
            #expect(try await rig.apns.requests().isEmpty)
        }
    }
}
