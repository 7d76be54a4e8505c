import ChannelAPI
import ChannelSupport
import Foundation
import HeraldChannels
import HeraldCrypto
import RouterTesting
import Testing

@testable import RelayChannel

@Suite("Relay protocol home-assistant")
struct HomeAssistantRelayTests {
    static func device(_ url: String) -> Device {
        Device(
            deviceId: "ha", platform: "mobile-app",
            fields: [
                "pushUrl": .string(url), "token": "fcm:tok-123",
                "registrationInfo": ["appId": "io.robbie.HomeAssistant", "appVersion": "2024.1", "osVersion": "17.2"],
            ])
    }

    let notification = HeraldNotification(
        title: "Door", body: "Front door opened", url: "/lovelace/0", tag: "door", data: ["k": "v"],
        actions: [NotificationAction(id: "ok", title: "OK", url: "https://x.example")])

    @Test func bodyShape() throws {
        let o = try RelayTest.object(HomeAssistantRelay.body(notification, device: Self.device("https://f.example")))
        #expect(o["message"] == "Front door opened")
        #expect(o["title"] == "Door")
        #expect(o["push_token"] == "fcm:tok-123")
        #expect(
            o["registration_info"] == [
                "app_id": "io.robbie.HomeAssistant", "app_version": "2024.1", "os_version": "17.2",
            ])
        #expect(o["data"]?["url"] == "/lovelace/0")
        #expect(o["data"]?["tag"] == "door")
        #expect(o["data"]?["k"] == "v")
        #expect(o["data"]?["actions"] == [["action": "ok", "title": "OK", "uri": "https://x.example"]])
    }

    @Test func encryptionKeyIsChecked() throws {
        #expect(try RelayTest.configError("type: relay\nprotocol: home-assistant\nencryption: secretbox") == nil)
        #expect(try RelayTest.configError("type: relay\nprotocol: home-assistant\nencryption: none") == nil)
        #expect(try RelayTest.configError("type: relay\nprotocol: home-assistant") == nil)
        #expect(try RelayTest.configError("type: relay\nprotocol: home-assistant\nencryption: aes") != nil)
    }

    @Test func pushURLPolicy() async throws {
        let setup = try RelaySetup.make("type: relay\nprotocol: home-assistant")
        await #expect(throws: ValidationError.self) {
            try await setup.channel.validateRegistration(Self.device("\(RelaySetup.baseURL)/push"))
        }
        let r = await setup.channel.deliver(
            DeliveryRequest(
                notification: notification, targets: [RelayTest.target(Self.device("\(RelaySetup.baseURL)/push"))]))
        #expect(r.first?.outcome == .failed)
        #expect(setup.http.requests.isEmpty)
    }

    @Test(arguments: [
        (
            201,
            "{\"rateLimits\":{\"successful\":3,\"maximum\":500,\"errors\":0,\"resetsAt\":\"2026-01-02T00:00:00Z\"}}",
            DeliveryOutcome.delivered
        ),
        (200, "{}", .delivered), (202, "{}", .delivered),
        (
            429,
            "{\"errorType\":\"RateLimited\",\"message\":\"limit\",\"rateLimits\":{\"resetsAt\":\"2026-01-01T01:00:00Z\"}}",
            .retry
        ),
        (500, "{\"errorType\":\"InvalidToken\",\"message\":\"gone\"}", .dead),
        (500, "{\"errorType\":\"PayloadTooLarge\",\"message\":\"big\"}", .failed),
        (500, "{\"errorType\":\"InternalError\"}", .retry), (503, "", .retry),
        (403, "{\"errorMessage\":\"You did not send a token!\"}", .failed),
    ])
    func answers(status: Int, body: String, expected: DeliveryOutcome) async throws {
        let setup = try RelaySetup.make("type: relay\nprotocol: home-assistant", allowHosts: ["127.0.0.1"])
        setup.http.route("/push", [.json(status, body)])
        let d = Self.device("\(RelaySetup.baseURL)/push")
        #expect(try await setup.channel.validateRegistration(d) == d)
        let r = await setup.channel.deliver(DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
        #expect(r.first?.outcome == expected)
        if status == 201 {
            #expect(r.first?.details["rateLimits.successful"] == "3")
            #expect(r.first?.details["rateLimits.maximum"] == "500")
        }
        if status == 429 { #expect(r.first?.retryAfter == .seconds(3600)) }  // ManualClock starts at 2026-01-01T00:00Z
        #expect(setup.http.requests.count == 1)
        #expect(!setup.sink.text.contains("fcm:tok-123"))
    }
}

/// `encryption: secretbox` (HA's libsodium secretbox, current key scheme).
@Suite("Relay protocol home-assistant, encryption: secretbox")
struct HomeAssistantSecretboxTests {
    /// The registration secret of `ha-mobile-app.md` §6.
    static let secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    static let yaml = "type: relay\nprotocol: home-assistant\nencryption: secretbox"

    static func device(_ url: String, secret: String? = Self.secret) -> Device {
        var d = HomeAssistantRelayTests.device(url)
        if let secret { d.fields["secret"] = .string(secret) }
        d.fields["registrationInfo"] = [
            "appId": "io.robbie.HomeAssistant", "appVersion": "2024.1", "osVersion": "17.2", "webhookId": "wh-1",
        ]
        return d
    }

    let notification = HeraldNotification(
        title: "Door", body: "Front door opened", url: "/lovelace/0", tag: "door", data: ["k": "v"],
        actions: [NotificationAction(id: "ok", title: "OK", url: "https://x.example")])

    @Test("Device secret: exactly 64 hex characters (HA's token_hex(32)); base64 keys are refused")
    func deviceSecretFormat() throws {
        func register(_ secret: String) throws(ValidationError) -> Device {
            try HeraldChannels.registry.device(
                json: [
                    "deviceId": "ha", "platform": "mobile-app", "pushUrl": "https://f.example/push", "token": "fcm:t",
                    "registrationInfo": ["appId": "a", "appVersion": "1", "osVersion": "2"], "secret": .string(secret),
                ])
        }
        #expect(try register(Self.secret).string("secret") == Self.secret)
        #expect(try register(Self.secret.uppercased()).string("secret") == Self.secret.uppercased())
        let base64Of32 = "ASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4mrze8="
        for bad in [
            base64Of32, String(Self.secret.dropLast()), Self.secret + "0", String(Self.secret.dropLast()) + "g", "",
        ] {
            do {
                _ = try register(bad)
                Issue.record("accepted secret \(bad)")
            } catch {
                #expect(error.field == "secret")
                #expect(error.message.contains("64 hex characters"))
            }
        }
    }

    @Test("Key = hex-decode(secret); anything but 64 hex characters has no key")
    func keyDerivation() {
        #expect(
            HomeAssistantRelay.key(secret: Self.secret)
                == Array(repeating: [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef], count: 4).flatMap { $0 })
        #expect(HomeAssistantRelay.key(secret: nil) == nil)
        #expect(HomeAssistantRelay.key(secret: String(Self.secret.dropLast())) == nil)
        #expect(HomeAssistantRelay.key(secret: String(Self.secret.dropLast(2)) + "zz") == nil)
    }

    @Test("FixedRandom nonce reproduces the §6 vector byte for byte")
    func vector() throws {
        let d = Self.device("https://f.example/push")
        let body = try HomeAssistantRelay.encryptedBody(
            HeraldNotification(body: "hi"), device: d, nonce: FixedRandom().bytes(24))
        let o = try RelayTest.object(body)
        #expect(
            o["encrypted_data"]
                == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX2j89SqkOYGNscdx6iP92qrWi9I6LpLL3U8tedRHxGg8=")
        #expect(o["encrypted"] == true)
    }

    @Test("The forwarder gets only push_token, registration_info, encrypted, encrypted_data; PyNaCl decrypts the rest")
    func endToEnd() async throws {
        let setup = try RelaySetup.make(Self.yaml, allowHosts: ["127.0.0.1"])
        setup.http.route("/push", [.json(201, "{}")])
        let d = Self.device("\(RelaySetup.baseURL)/push")
        #expect(try await setup.channel.validateRegistration(d) == d)
        let r = await setup.channel.deliver(DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
        #expect(r.first?.outcome == .delivered)
        let requests = setup.http.requests
        #expect(requests.count == 1)
        let body = try #require(requests.first).body
        let o = try RelayTest.object(body)
        #expect(Set(o.keys) == ["encrypted", "encrypted_data", "push_token", "registration_info"])
        #expect(o["encrypted"] == true)
        #expect(o["push_token"] == "fcm:tok-123")
        #expect(
            o["registration_info"] == [
                "app_id": "io.robbie.HomeAssistant", "app_version": "2024.1", "os_version": "17.2",
                "webhook_id": "wh-1",
            ])
        let text = String(decoding: body, as: UTF8.self)
        for clear in ["Front door opened", "Door", "lovelace", "actions", Self.secret] {
            #expect(!text.contains(clear), "\(clear) leaked into the clear body")
        }
        let data = try #require(o["encrypted_data"]?.stringValue)
        let raw = try Base64.decode(data)
        #expect(raw.count > 40)
        #expect(Array(raw.prefix(24)) == FixedRandom().bytes(24))
        let check: JSONValue = ["secret": .string(Self.secret), "encrypted_data": .string(data)]
        let plain = try APNsTestSupport.python("relay_ha_secretbox.py", [], stdin: check.canonicalString)
        let decrypted = try JSONValue.parse(Array(plain.utf8))
        #expect(
            decrypted == [
                "message": "Front door opened", "title": "Door",
                "data": [
                    "k": "v", "url": "/lovelace/0", "tag": "door",
                    "actions": [["action": "ok", "title": "OK", "uri": "https://x.example"]],
                ],
            ])
        // The plaintext is exactly what would otherwise be sent in clear (minus push_token/registration_info).
        var clear = try RelayTest.object(HomeAssistantRelay.body(notification, device: d))
        clear["push_token"] = nil
        clear["registration_info"] = nil
        #expect(decrypted == .object(clear))
        #expect(!setup.sink.text.contains(Self.secret))
        #expect(!setup.sink.text.contains("fcm:tok-123"))
    }

    @Test("Without a secret: registration refused (field secret), delivery failed and nothing sent in clear")
    func missingSecret() async throws {
        let setup = try RelaySetup.make(Self.yaml, allowHosts: ["127.0.0.1"])
        setup.http.route("/push", [.json(201, "{}")])
        let d = Self.device("\(RelaySetup.baseURL)/push", secret: nil)
        do {
            _ = try await setup.channel.validateRegistration(d)
            Issue.record("device without a secret accepted")
        } catch {
            #expect(error.field == "secret")
        }
        var bad = d
        bad.fields["secret"] = "not-hex"
        await #expect(throws: ValidationError.self) { try await setup.channel.validateRegistration(bad) }
        for device in [d, bad] {
            let r = await setup.channel.deliver(
                DeliveryRequest(notification: notification, targets: [RelayTest.target(device)]))
            #expect(r.first?.outcome == .failed)
            #expect(r.first?.reason?.contains("not sent in clear") == true)
        }
        #expect(setup.http.requests.isEmpty)
        // Without encryption a device without a secret is fine and gets the clear body.
        let plain = try RelaySetup.make("type: relay\nprotocol: home-assistant", allowHosts: ["127.0.0.1"])
        #expect(try await plain.channel.validateRegistration(d) == d)
    }

    @Test("Secret never reaches logs or reasons, whatever the forwarder answers")
    func noSecretInLogs() async throws {
        let setup = try RelaySetup.make(Self.yaml, allowHosts: ["127.0.0.1"])
        setup.http.route(
            "/push",
            [
                .json(500, "{\"errorType\":\"InternalError\"}"), .json(403, "{\"errorMessage\":\"no\"}"),
                .json(201, "{}"),
            ])
        let d = Self.device("\(RelaySetup.baseURL)/push")
        var reasons: [String] = []
        for _ in 0..<3 {
            let r = await setup.channel.deliver(
                DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
            reasons += r.compactMap(\.reason)
        }
        let key = Base64.encode(try #require(HomeAssistantRelay.key(secret: Self.secret)))
        for leak in [Self.secret, key, "fcm:tok-123"] {
            #expect(!setup.sink.text.contains(leak))
            #expect(!reasons.contains { $0.contains(leak) })
        }
    }
}

/// Issue 15 item 1: a relay's `rateLimits.resetsAt` far in the future is a one-day retry, not a trap.
@Suite struct HomeAssistantRelayClampTests {
    /// The last one is what `fuzz-relay-response` found: ICU's ISO 8601 formatter died on its
    /// fraction with a division by zero (SIGFPE), taking the process with it.
    @Test(arguments: [
        "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999Z",
        "9999-12-31T23:59:59.0009999999999999999999999999999999999999999999999999999999Z",
    ]) func farFutureResetIsCut(_ resets: String) {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let target = DeliveryTarget(device: Device(deviceId: "d", platform: "mobile-app"), deliveryId: "1")
        let body = #"{"rateLimits":{"resetsAt":"\#(resets)"}}"#
        let r = HomeAssistantRelay.classify(target, status: 429, body: Array(body.utf8), now: now, retryAfter: nil)
        #expect(r.outcome == .retry)
        #expect(r.retryAfter == RetryAfter.maximum)
    }
}

/// A `resetsAt` an hour ahead, in the forms RFC 3339 allows, is an hour's wait; text that is not a
/// date-time leaves the relay's own answer (no `Retry-After` here: the default backoff).
@Suite struct HomeAssistantRelayResetTests {
    @Test(arguments: [
        "2026-01-01T01:00:00Z", "2026-01-01T01:00:00.000Z", "2026-01-01T02:00:00+01:00", "2026-01-01t01:00:00z",
        "2025-12-31T20:00:00-05:00",
    ]) func resetAnHourAheadIsAnHour(_ resets: String) {
        let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let target = DeliveryTarget(device: Device(deviceId: "d", platform: "mobile-app"), deliveryId: "1")
        let body = #"{"rateLimits":{"resetsAt":"\#(resets)"}}"#
        let r = HomeAssistantRelay.classify(target, status: 429, body: Array(body.utf8), now: now, retryAfter: nil)
        #expect(r.outcome == .retry)
        #expect(r.retryAfter == .seconds(3600), "\(resets)")
    }

    @Test(arguments: ["tomorrow", "2026-01-01", "2026-01-01T01:00:00", "2026-02-30T00:00:00Z", ""])
    func notADateTimeIsIgnored(_ resets: String) {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let target = DeliveryTarget(device: Device(deviceId: "d", platform: "mobile-app"), deliveryId: "1")
        let body = #"{"rateLimits":{"resetsAt":"\#(resets)"}}"#
        let r = HomeAssistantRelay.classify(target, status: 429, body: Array(body.utf8), now: now, retryAfter: nil)
        #expect(r.outcome == .retry)
        #expect(r.retryAfter == nil, "\(resets)")
    }
}
