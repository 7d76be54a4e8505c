import ChannelAPI
import Router
import RouterTesting
import Testing

/// Results are matched back to their targets by `deliveryId` (issue 16 item 4), not by
/// `(deviceId, platform)` with a prefix fallback.
@Suite struct DeliveryIdMatchingTests {
    /// One physical device on two platforms (`phone` and `wear`, same deviceId), served by one channel
    /// whose results leave `platform` out: the old `(deviceId, platform)` match fell back to a prefix
    /// match, gave both results to the same delivery and reported the other as "no result". Matched
    /// by deliveryId, each result lands on its own target.
    @Test func resultsAreMatchedByDeliveryIdNotByDevice() async throws {
        let h = try await Harness.make(routes: "routes:\n  default:\n    - deliver: [fcm]\n")
        h.fcm.answer { target, _ in
            var r: DeliveryResult =
                target.device?.platform == "phone" ? .dead(target, status: 410, reason: "gone") : .delivered(target)
            r.platform = nil
            return r
        }
        try await h.router.register(Device(deviceId: "d", platform: "phone", fields: ["token": "t-phone"]))
        try await h.router.register(Device(deviceId: "d", platform: "wear", fields: ["token": "t-wear"]))
        let report = try await h.router.send(HeraldNotification(title: "hi"))
        let byPlatform = Dictionary(uniqueKeysWithValues: report.deliveries.map { ($0.platform ?? "", $0.state) })
        #expect(byPlatform["phone"] == .dead)
        #expect(byPlatform["wear"] == .delivered)
        #expect(try h.router.devices().map(\.platform) == ["wear"])
        await h.router.shutdown()
    }

    /// A result whose deliveryId names no target of the call is ignored; the target it should have
    /// answered gets the router's "no result" retry.
    @Test func aResultForAnUnknownDeliveryIdIsIgnored() async throws {
        let h = try await Harness.make(routes: "routes:\n  default:\n    - deliver: [fcm]\n")
        h.fcm.answer { target, _ in
            var r = DeliveryResult.delivered(target)
            r.deliveryId = "someone-else"
            return r
        }
        try await h.router.register(Device(deviceId: "d", platform: "phone", fields: ["token": "t"]))
        let report = try await h.router.send(HeraldNotification(title: "hi"))
        #expect(report.deliveries.map(\.state) == [.retry])
        #expect(report.deliveries.first?.reason == "channel returned no result for this device")
        await h.router.shutdown()
    }
}
