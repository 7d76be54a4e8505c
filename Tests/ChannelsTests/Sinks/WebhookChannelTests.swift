import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting
import SinkChannels
import Testing

/// The webhook sink against the Standard Webhooks specification (spec/standard-webhooks.md):
/// `webhook-id` is unique per message, the same on every retry, and never contains `.` (the
/// separator of the signed content `{msg_id}.{timestamp}.{payload}`).
@Suite("Webhook sink: Standard Webhooks")
struct WebhookChannelTests {
    /// The specification's published test vector.
    static let vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    @Test func signatureMatchesTheSpecVector() throws {
        let key = try WebhookChannel.decodeSecret(Self.vectorSecret)
        let signature = WebhookChannel.signature(
            key: key, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Array("{\"test\": 2432232314}".utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func webhookIdIsStableAndHasNoFullStop() async throws {
        let http = ScriptedTransport()
        http.route("https://hooks.example/hooks", [.json(500, "{}"), .json(200, "{}")])
        let config = try APNsTestSupport.config(
            "type: webhook\nurl: \"https://hooks.example/hooks\"\nsecret: \(Self.vectorSecret)", name: "audit")
        let clock = ManualClock()
        let context = ChannelContext(
            name: "audit", http: http, clock: clock, random: FixedRandom(),
            logger: ChannelLogger(source: "audit", sink: RecordingLogSink(), clock: clock),
            state: InMemoryChannelState())
        let channel = try WebhookChannel.factory.make(config, context)
        try config.finish()
        // The router's delivery ids are version-7 UUIDs; a retry reuses the delivery id.
        let deliveryId = UUIDGenerator.makeTimeOrdered(1, at: 1_767_225_600_000, random: SystemRandom())[0]
        let target = DeliveryTarget(device: nil, deliveryId: deliveryId)
        let n = HeraldNotification(title: "t", body: "b")
        #expect(await channel.deliver(DeliveryRequest(notification: n, targets: [target])).first?.outcome == .retry)
        clock.advance(by: .seconds(5))
        #expect(
            await channel.deliver(DeliveryRequest(notification: n, targets: [target])).first?.outcome == .delivered)
        // A delivery id from an embedder that contains the separator.
        let dotted = DeliveryTarget(device: nil, deliveryId: "hub.42")
        _ = await channel.deliver(DeliveryRequest(notification: n, targets: [dotted]))
        let requests = http.requests
        try #require(requests.count == 3)
        #expect(requests.allSatisfy { $0.method == "POST" && $0.url == "https://hooks.example/hooks" })
        let ids = requests.map { $0.header("webhook-id") ?? "" }
        #expect(ids[0] == "msg_" + deliveryId)
        #expect(ids[1] == ids[0])
        #expect(ids[2] != ids[0])
        let key = try WebhookChannel.decodeSecret(Self.vectorSecret)
        for (r, id) in zip(requests, ids) {
            #expect(APNsTestSupport.matches(id, "^msg_[A-Za-z0-9_-]+$"), "webhook-id \(id)")
            #expect(!id.contains("."))
            // The signature covers exactly the id sent.
            let timestamp = try #require(r.header("webhook-timestamp").flatMap { Int64($0) })
            #expect(
                r.header("webhook-signature")
                    == WebhookChannel.signature(key: key, id: id, timestamp: timestamp, body: r.body))
        }
        #expect(WebhookChannel.webhookID(for: "hub.42") == ids[2])
    }
}
