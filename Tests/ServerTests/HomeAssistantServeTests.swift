import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Router
import Testing

/// The Home Assistant push forwarder served by `herald serve` (docs/relay-server.md), end to end: a hub
/// Herald's `relay` channel (protocol home-assistant) and an independent Python client written from
/// seed 003 post to the relay Herald, which delivers to a loopback fake APNs (HTTP/2) or fake FCM.
@Suite("Home Assistant forwarder end to end", .serialized, .stopsFakeHTTPServers)
struct HomeAssistantServeTests {
    static let relays = """
            home-assistant:
              channel: fcm
              auth: none
              daily-limit: 3
              apps: { "io.robbie.HomeAssistant*": apns }
        """

    static let iosApp = "io.robbie.HomeAssistant.beta"
    static let androidApp = "io.homeassistant.companion.android"
    static let fcmToken = "fcm-token-0123456789"
    static let secret = String(repeating: "0f", count: 32)

    static func device(_ rig: RelayRig, namespace: String, appId: String, token: String) -> Device {
        Device(
            namespace: namespace, deviceId: "phone", platform: "mobile-app",
            fields: [
                "pushUrl": .string(rig.base + "/api/sendPush/iOS/v1"), "token": .string(token),
                "secret": .string(secret),
                "registrationInfo": [
                    "appId": .string(appId), "appVersion": "2.0.0 (68)", "osVersion": "13.1.3", "webhookId": "w-1",
                ],
            ])
    }

    static func notification(_ namespace: String) -> HeraldNotification {
        var n = HeraldNotification(title: "Front Door")
        n.namespace = namespace
        n.body = "The front door is opened"
        n.tag = "door"
        return n
    }

    static func fcmOK() -> FakeHTTPResponse {
        .json(200, #"{"name":"projects/relay-test/messages/42"}"#)
    }

    /// Plain, iOS app: the hub's push reaches APNs mapped field by field, with the tag as collapse id.
    @Test func plainPushFromTheHubReachesAPNs() async throws {
        try await RelayRig.with(relays: Self.relays, fcm: true, tls: true) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(200)
            _ = try await hub.register(Self.device(rig, namespace: "ha", appId: Self.iosApp, token: RelayRig.token))
            let report = try await hub.send(Self.notification("ha"))
            #expect(report.deliveries.map(\.state) == [.delivered], "\(report.deliveries.map(\.reason))")
            let requests = try await rig.apns.requests()
            #expect(requests.count == 1, "one delivery per accepted request")
            let sent = try #require(requests.first)
            #expect(sent.path == "/3/device/\(RelayRig.token)")
            #expect(sent.httpVersion == "2")
            #expect(sent.header("apns-push-type") == "alert")
            #expect(sent.header("apns-topic") == "com.example.app")
            #expect(sent.header("apns-collapse-id") == "door")
            let body = try JSONValue.parse(sent.body)
            #expect(body["aps"]?["alert"] == ["title": "Front Door", "body": "The front door is opened"])
            #expect(body["tag"] == "door")
            #expect(!rig.relayLog.text.contains(RelayRig.token))
        }
    }

    /// Encrypted, Android app: FCM gets a data message carrying the seed's fields, the ciphertext
    /// unchanged, with the relay's OAuth token; Herald sees no clear text.
    @Test func encryptedPushFromTheHubReachesFCM() async throws {
        try await RelayRig.with(relays: Self.relays, fcm: true, tls: true) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(200)
            try await rig.fcmAnswers([Self.fcmOK()])
            _ = try await hub.register(Self.device(rig, namespace: "has", appId: Self.androidApp, token: Self.fcmToken))
            let report = try await hub.send(Self.notification("has"))
            #expect(report.deliveries.map(\.state) == [.delivered], "\(report.deliveries.map(\.reason))")
            let sends = try await rig.apns.requests().filter { $0.path == RelayRig.fcmSendPath }
            #expect(sends.count == 1)
            let sent = try #require(sends.first)
            #expect(sent.method == "POST")
            #expect(sent.header("authorization") == "Bearer ya29.relay-test")
            let message = try #require(try JSONValue.parse(sent.body)["message"])
            #expect(message["token"] == .string(Self.fcmToken))
            #expect(message["notification"] == nil, "a data message")
            #expect(message["data"]?["encrypted"] == "true")
            let sealed = try Base64.decode(message["data"]?["encrypted_data"]?.stringValue ?? "")
            #expect(sealed.count > 40)
            let registration = try JSONValue.parse(
                Array((message["data"]?["registration_info"]?.stringValue ?? "").utf8))
            #expect(registration["app_id"] == .string(Self.androidApp))
            #expect(
                message["apns"]?["payload"]?["aps"]?["alert"]?["title"] == "Encrypted notification")
            #expect(message["apns"]?["payload"]?["aps"]?["mutable-content"] == 1)
            #expect(!sent.body.isEmpty && !String(decoding: sent.body, as: UTF8.self).contains("front door"))
        }
    }

    /// Outcomes through the relay, on the hub's side: a dead token is dead, a throttled APNs is a
    /// retry, a refused push is failed; each is one APNs request.
    @Test(
        arguments: [
            (410, "Unregistered", DeliveryState.dead), (400, "BadDeviceToken", .dead), (429, "TooManyRequests", .retry),
            (503, "ServiceUnavailable", .retry), (413, "PayloadTooLarge", .failed), (400, "BadCollapseId", .failed),
        ] as [(Int, String, DeliveryState)])
    func outcomesComeThroughTheForwarder(status: Int, reason: String, expected: DeliveryState) async throws {
        try await RelayRig.with(relays: Self.relays, fcm: true, tls: true) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(status, reason)
            _ = try await hub.register(Self.device(rig, namespace: "ha", appId: Self.iosApp, token: RelayRig.token))
            let report = try await hub.send(Self.notification("ha"))
            #expect(report.deliveries.map(\.state) == [expected], "\(report.deliveries.map(\.reason))")
            #expect(try await rig.apns.requests().count == 1, "one delivery per accepted request, never two")
        }
    }

    /// FCM outcomes through the relay, on the hub's side: `UNREGISTERED` is dead, a throttled or
    /// unavailable FCM a retry, `INVALID_ARGUMENT` failed; each is one FCM request.
    @Test(
        arguments: [
            (404, "UNREGISTERED", DeliveryState.dead), (429, "QUOTA_EXCEEDED", .retry),
            (503, "UNAVAILABLE", .retry), (400, "INVALID_ARGUMENT", .failed),
        ] as [(Int, String, DeliveryState)])
    func fcmOutcomesComeThroughTheForwarder(status: Int, code: String, expected: DeliveryState) async throws {
        try await RelayRig.with(relays: Self.relays, fcm: true, tls: true) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(200)
            let error =
                #"{"error":{"code":\#(status),"message":"m","status":"\#(code)","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}]}}"#
            try await rig.fcmAnswers([.json(status, error)])
            _ = try await hub.register(Self.device(rig, namespace: "ha", appId: Self.androidApp, token: Self.fcmToken))
            let report = try await hub.send(Self.notification("ha"))
            #expect(report.deliveries.map(\.state) == [expected], "\(report.deliveries.map(\.reason))")
            let sends = try await rig.apns.requests().filter { $0.path == RelayRig.fcmSendPath }
            #expect(sends.count == 1, "one delivery per accepted request, never two")
        }
    }

    /// HA Core's exact JSON from an independent client: 201 `{messageId, rateLimits}` (plain to APNs,
    /// encrypted to FCM), 429 with `rateLimits` past the daily limit, the dead-token shape, 400 for bad
    /// input with nothing sent.
    @Test func answersAnIndependentClient() async throws {
        try await RelayRig.with(relays: Self.relays, withHub: false, fcm: true) { rig in
            let url = rig.base + "/api/sendPush/iOS/v1"
            func run(_ token: String, _ app: String, _ mode: String, _ count: Int = 1) throws -> [JSONValue] {
                try RelayRig.script("ha_push_client.py", [url, token, app, mode, String(count)])
            }
            try await rig.apnsAnswers(200)
            try await rig.fcmAnswers([Self.fcmOK()])
            let plain = try run(RelayRig.token, Self.iosApp, "plain")[0]
            #expect(plain["status"] == 201)
            #expect(plain["body"]?["messageId"]?.stringValue?.isEmpty == false)
            let limits = try #require(plain["body"]?["rateLimits"])
            #expect(limits["successful"] == 1)
            #expect(limits["errors"] == 0)
            #expect(limits["maximum"] == 3)
            #expect(limits["resetsAt"]?.stringValue?.hasSuffix("T00:00:00Z") == true)
            #expect(plain["logged"]?.stringValue?.hasPrefix("1 sent, 3 allowed, 0 errors") == true)
            let apnsBody = try JSONValue.parse(try #require(try await rig.apns.requests().first).body)
            #expect(apnsBody["aps"]?["alert"]?["subtitle"] == "TwelveTwelve")
            #expect(apnsBody["aps"]?["badge"] == 5)
            #expect(apnsBody["aps"]?["mutable-content"] == 1)

            let encrypted = try run(Self.fcmToken, Self.androidApp, "encrypted")[0]
            #expect(encrypted["status"] == 201)
            #expect(encrypted["body"]?["messageId"] == "projects/relay-test/messages/42")
            let fcm = try #require(try await rig.apns.requests().first { $0.path == RelayRig.fcmSendPath })
            let data = try JSONValue.parse(fcm.body)["message"]?["data"]
            #expect(data?["encrypted_data"]?.stringValue?.hasPrefix("j6lwIesVlc+1rYltzw1iFgZZgir3") == true)
            #expect(
                data?["registration_info"]
                    == #"{"app_id":"io.homeassistant.companion.android","app_version":"2.0.0 (68)","os_version":"13.1.3"}"#
            )

            // The limit: 3 a day per token; the second and third pass, the fourth is 429 with rateLimits.
            let flood = try run(RelayRig.token, Self.iosApp, "plain", 3)
            #expect(flood.map { $0["status"] } == [201, 201, 429])
            #expect(flood[2]["body"]?["rateLimits"]?["successful"] == 3)
            #expect(flood[2]["body"]?["rateLimits"]?["maximum"] == 3)
            #expect(flood[2]["body"]?["message"]?.stringValue?.contains("maximum number") == true)
            let sentBefore = try await rig.apns.requests().count

            // A dead token: HA logs `message`.
            try await rig.apnsAnswers(410, "Unregistered")
            let dead = try run(String(repeating: "cd34", count: 16), Self.iosApp, "plain")[0]
            #expect(dead["status"] == 500)
            #expect(dead["body"]?["errorType"] == "InvalidToken")
            #expect(dead["body"]?["rateLimits"]?["errors"] == 1)
            #expect(dead["logged"]?.stringValue?.contains("not valid") == true)

            try await rig.apns.reset()
            for mode in ["no-token", "no-message", "wrong-type", "not-json", "bad-encrypted"] {
                let r = try run("ee11ee11ee11ee11", Self.iosApp, mode)[0]
                #expect(r["status"] == 400, "\(mode)")
                #expect(r["body"]?["message"]?.stringValue?.isEmpty == false, "\(mode)")
            }
            let hexless = try run("not-hex", Self.iosApp, "plain")[0]
            #expect(hexless["status"] == 400)
            #expect(try await rig.apns.requests().isEmpty, "bad input sends nothing")
            #expect(sentBefore >= 3)

            let metrics = try await RawHTTP.request(port: rig.server.port, "GET", "/metrics")
            #expect(metrics.text.contains(#"herald_relay_requests_total{protocol="home-assistant",code="201"} 4"#))
            #expect(metrics.text.contains(#"herald_relay_requests_total{protocol="home-assistant",code="429"} 1"#))
        }
    }
}
