import APNsChannel
import ChannelAPI
import FCMChannel
import Foundation
import HeraldCrypto
import RelayChannel
import RouterTesting
import SinkChannels
import TelegramChannel
import Testing
import WebPushChannel

/// Every built-in channel passes `ChannelConformance` (issue 16 item 6): one result per target with
/// its deliveryId, no throw, the same idempotency key on a retry, `dead` only for the answers its
/// own table calls permanent, and no configured secret logged.
@Suite struct ChannelConformanceTests {
    static func expectConforms(_ check: ChannelConformance) async {
        let violations = await check.run()
        #expect(violations.isEmpty, "\(violations.map(\.description).joined(separator: "\n"))")
    }

    @Test func logConforms() async {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-log-\(UUID().uuidString)")
        await Self.expectConforms(
            ChannelConformance(factory: LogChannel.factory, config: "path: \(path.path)", devices: []))
    }

    @Test func webhookConforms() async {
        await Self.expectConforms(
            ChannelConformance(
                factory: WebhookChannel.factory,
                config: "url: https://hooks.example/herald\nsecret: whsec_c2VjcmV0LXdlYmhvb2sta2V5LTEyMzQ1Njc4OTA=",
                devices: []))
    }

    @Test func telegramConforms() async {
        await Self.expectConforms(
            ChannelConformance(
                factory: TelegramChannel.factory, config: "bot-token: 123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                devices: [
                    Device(deviceId: "t1", platform: "telegram", fields: ["chatId": 1_234_567]),
                    Device(deviceId: "t2", platform: "telegram", fields: ["chatId": "@alerts_channel"]),
                ],
                deadAnswers: [
                    .status(
                        403, #"{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}"#)
                ],
                // The Bot API has no idempotency key (sendMessage cannot be deduplicated).
                idempotencyKey: nil))
    }

    @Test func webPushConforms() async throws {
        let subscribers = try (1...2).map { try TestSubscriber(endpoint: "https://push.example/sub/\($0)") }
        await Self.expectConforms(
            ChannelConformance(
                factory: WebPushChannel.factory, config: #"vapid: {subject: "mailto:ops@example.com"}"#,
                devices: subscribers.enumerated().map { $1.device("w\($0)") },
                deadAnswers: [.status(404, "{}"), .status(410, "{}")],
                // RFC 8030 has no idempotency key (Topic replaces, it does not deduplicate).
                idempotencyKey: nil))
    }

    @Test func fcmConforms() async throws {
        let dir = FCMFixture.temporaryDirectory()
        let path = try FCMFixture.writeServiceAccount(
            FCMFixture.serviceAccountJSON(tokenURI: "https://oauth2.example/token"), in: dir)
        let token = #"{"access_token":"ya29.conformance-access-token","expires_in":3600,"token_type":"Bearer"}"#
        await Self.expectConforms(
            ChannelConformance(
                factory: FCMChannel.factory, config: "service-account: \(path)",
                devices: [FCMFixture.phone("p1"), FCMFixture.phone("w1", platform: "wear")],
                deadAnswers: [
                    .status(
                        404,
                        #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
                    )
                ],
                fixed: { request in
                    request.url.hasPrefix("https://oauth2.example/")
                        ? .success(HTTPResponse(status: 200, body: Array(token.utf8))) : nil
                },
                // FCM v1 has no idempotency header: the delivery id travels in the message's data
                // (heraldDeliveryId), where the app drops a duplicate.
                idempotencyKey: { request in
                    (try? JSONValue.parse(request.body))?["message"]?["data"]?["heraldDeliveryId"]?.stringValue
                },
                secrets: ["ya29.conformance-access-token"]))
    }

    @Test func apnsConforms() async throws {
        let dir = try APNsTestSupport.temporaryDirectory()
        let (_, p8) = try APNsTestSupport.writeP8(in: dir)
        await Self.expectConforms(
            ChannelConformance(
                factory: APNsChannel.factory,
                config: "key-p8: \(p8)\nkey-id: TESTKEY123\nteam-id: TEAM123456\ntopic: com.example.app",
                devices: [
                    APNsTestSupport.device("i1", token: "00112233445566778899aabbccddeeff"),
                    APNsTestSupport.device("i2", token: "ffeeddccbbaa99887766554433221100"),
                ],
                deadAnswers: [
                    .status(410, #"{"reason":"Unregistered","timestamp":1700000000000}"#),
                    .status(400, #"{"reason":"BadDeviceToken"}"#),
                ]))
    }

    @Test func hapiRelayConforms() async {
        await Self.expectConforms(
            ChannelConformance(
                factory: RelayChannel.factory, config: "protocol: hapi\nurl: https://relay.example",
                devices: [RelayTest.ios("r1", token: HapiRelayTests.token, pushKey: HapiRelayTests.key)],
                deadAnswers: [.status(410, "{}")],
                // hapi's relay protocol carries no idempotency key (seed 000).
                idempotencyKey: nil))
    }
}
