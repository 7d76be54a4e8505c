import ChannelAPI
import ChannelSupport
import Foundation
import RouterTesting
import Testing

@testable import HeraldServer

/// The Home Assistant push forwarder's pure parts (docs/relay-server.md): its config (the app-id map), what
/// it reads, the provider payloads taken field by field from seed 003, and the daily counters.
@Suite struct HomeAssistantForwarderTests {
    static func forwarder(_ section: String) throws -> HomeAssistantForwarder {
        let s = try RelayConfigTests.server(section)
        let relays = try RelaysConfig.read(s.relays, loopback: true)
        let settings = try #require(relays.first { $0.module.name == "home-assistant" })
        let made = try HomeAssistantForwarder.module.make(settings.module)
        return try #require(made as? HomeAssistantForwarder)
    }

    /// The seed's body, verbatim but for the token (the seed's is empty, which the forwarder refuses).
    static let seedEncrypted = """
        {"encrypted":true,"encrypted_data":"\(seedData)","push_token":"tok-1",
         "registration_info":{"app_id":"io.robbie.HomeAssistant.beta","app_version":"2.0.0 (68)","os_version":"13.1.3"}}
        """
    static let seedData =
        "j6lwIesVlc+1rYltzw1iFgZZgir3QcZzs+erYXIB6TphTl6bY6xQUYYqhXQ6tGjFAWvMetre/FC89Z85OLExlm3AwX4TzEbbmpLLAoD+zuiG+FugGk756fju58ImTA+Ci5echwgyMNwehKC/RYsbS0V0YieMU34RG/2DT6SDAh++/DmktPBpealTBLnEHRx4/PuNMeqdC7kB5nfkr1gYaBBEXON0R/yLc0sR4qk42RcIyOMd2VrG1apRBSxJizhQVyBrwUWe4z8UdhlXuwLDUhBtieB/xRJSJg1B74ywGvfEtsVJVLlFii8BSsgP/wp/RlcRMLRy8ixa/WPNHLj9YSXLCNYrIvjhTwlxhjAEZncO6fHy0jOuAWbiCrWPgju2q7zWwUxtNO13rGV5pXju++sjiuGn0gKvDBsaw9ZWnVZmR50NeBVha7e4XgUPpS5+Wx78DukpCcuRU/s3N9Q4yCQHkiPtFKszEg6A5FDYb9gGnzD5aSBfKINbNDmh6oBQvN6G2HBsO8E8AdA1cOupMWEFE6b6Y7taHxgNAaX3ik1zYKGe+zDSUSv0SWqIsx8MbbgG+qkSvdNqHswvOw=="

    @Test func appIdsPickTheirChannelMostSpecificFirst() throws {
        let f = try Self.forwarder(
            """
                home-assistant:
                  channel: fcm
                  daily-limit: 20
                  apps: { "io.robbie.HomeAssistant*": apns, "io.robbie.HomeAssistant.dev": sandbox, "io.robbie.*": other }
            """)
        #expect(f.dailyLimit == 20)
        #expect(f.channel(for: "io.robbie.HomeAssistant") == "apns")
        #expect(f.channel(for: "io.robbie.HomeAssistant.beta") == "apns")
        #expect(f.channel(for: "io.robbie.HomeAssistant.dev") == "sandbox")
        #expect(f.channel(for: "io.robbie.Other") == "other")
        #expect(f.channel(for: "io.homeassistant.companion.android") == "fcm")
        #expect(f.routes.map(\.path).contains("/api/sendPush/iOS/v1"))
        let defaults = try Self.forwarder("    home-assistant: { channel: fcm }")
        #expect(defaults.dailyLimit == 500)
        #expect(defaults.channel(for: "io.robbie.HomeAssistant") == "fcm")
    }

    @Test(arguments: [
        "    home-assistant: { channel: fcm, apps: { \"io.*.x\": apns } }",
        "    home-assistant: { channel: fcm, apps: { \"*\": apns } }",
        "    home-assistant: { channel: fcm, apps: { \"io.x\": \"\" } }",
        "    home-assistant: { channel: fcm, apps: [apns] }",
        "    home-assistant: { channel: fcm, daily-limit: 0 }",
        "    home-assistant: { channel: fcm, colour: red }",
        "    home-assistant: { apps: { \"io.x\": apns } }",
    ])
    func badSectionsAreConfigErrors(_ section: String) throws {
        #expect(throws: ConfigError.self) { try Self.forwarder(section) }
    }

    /// Seed 003: APNs gets the alert, `mutable-content: 1`, and the seed's `data` strings at the top
    /// level; FCM gets the seed's message (`data`, `apns.payload`) with a token.
    @Test func encryptedPushesAreTheSeedsForm() throws {
        let push = try HomeAssistantPush.parse(Array(Self.seedEncrypted.utf8))
        let registration =
            #"{"app_id":"io.robbie.HomeAssistant.beta","app_version":"2.0.0 (68)","os_version":"13.1.3"}"#
        let aps: JSONValue = [
            "alert": [
                "title": "Encrypted notification",
                "body": "If you're seeing this, something has gone wrong with encryption",
            ],
            "mutable-content": 1,
        ]
        let apns = try push.apns()
        #expect(apns.collapseID == nil)
        #expect(
            apns.payload == [
                "aps": aps, "encrypted": "true", "encrypted_data": .string(Self.seedData),
                "registration_info": .string(registration),
            ])
        let fcm = try push.fcm().payload
        #expect(fcm["apns"] == ["payload": ["aps": aps]])
        #expect(
            fcm["data"] == [
                "encrypted": "true", "encrypted_data": .string(Self.seedData),
                "registration_info": .string(registration),
            ])
        #expect(fcm["token"] == nil, "the channel adds the token")
    }

    /// A clear notification, field by field: title, message, subtitle, image, tag as collapse id,
    /// actions, `data.push` into `aps`.
    @Test func plainPushesAreMappedFieldByField() throws {
        let body = #"""
            {"message":"The front door is opened","title":"Front Door","push_token":"abcd1234",
             "registration_info":{"app_id":"io.robbie.HomeAssistant","app_version":"2024.1","os_version":"17.2","webhook_id":"w1"},
             "data":{"subtitle":"TwelveTwelve","image":"https://x/y.png","tag":"one","push":{"badge":5,"sound":"default"},
                     "actions":[{"action":"action_one","title":"Action 1"}]}}
            """#
        let push = try HomeAssistantPush.parse(Array(body.utf8))
        let apns = try push.apns()
        #expect(apns.collapseID == "one")
        #expect(
            apns.payload["aps"] == [
                "alert": ["title": "Front Door", "subtitle": "TwelveTwelve", "body": "The front door is opened"],
                "badge": 5, "sound": "default", "mutable-content": 1,
            ])
        #expect(apns.payload["image"] == "https://x/y.png")
        #expect(apns.payload["tag"] == "one")
        #expect(apns.payload["actions"] == [["action": "action_one", "title": "Action 1"]])
        #expect(apns.payload["push"] == nil)
        let fcm = try push.fcm().payload
        #expect(fcm["data"]?["message"] == "The front door is opened")
        #expect(fcm["data"]?["title"] == "Front Door")
        #expect(fcm["data"]?["webhook_id"] == "w1")
        #expect(fcm["data"]?["actions"] == #"[{"action":"action_one","title":"Action 1"}]"#)
        #expect(fcm["android"] == ["priority": "high", "collapse_key": "one"])
        #expect(fcm["notification"] == nil, "a data message")
    }

    @Test(arguments: [
        "{", "[]", #"{"message":"m","registration_info":{"app_id":"a"}}"#,
        #"{"message":"m","push_token":"t"}"#, #"{"message":"m","push_token":"t","registration_info":{}}"#,
        #"{"push_token":"t","registration_info":{"app_id":"a"}}"#,
        #"{"message":1,"push_token":"t","registration_info":{"app_id":"a"}}"#,
        #"{"message":"m","data":"x","push_token":"t","registration_info":{"app_id":"a"}}"#,
        #"{"encrypted":true,"encrypted_data":"%%%","push_token":"t","registration_info":{"app_id":"a"}}"#,
        #"{"encrypted":"yes","push_token":"t","registration_info":{"app_id":"a"}}"#,
    ])
    func badBodiesAre400(_ body: String) {
        #expect(throws: HomeAssistantPush.Refusal.self) { try HomeAssistantPush.parse(Array(body.utf8)) }
    }

    /// An APNs channel needs a hex token; FCM takes any.
    @Test func apnsTokensMustBeHex() throws {
        let push = try HomeAssistantPush.parse(Array(Self.seedEncrypted.utf8))
        #expect(throws: HomeAssistantPush.Refusal.self) { try HomeAssistantForwarder.prepare(push, kind: .apns) }
        #expect(try HomeAssistantForwarder.prepare(push, kind: .fcm) != nil)
        #expect(try HomeAssistantForwarder.prepare(push, kind: nil) == nil)
    }

    /// The counters: `maximum` attempts a UTC day, then refused; the next UTC day (by the injected
    /// clock) starts again; `resetsAt` is the next midnight.
    @Test func dailyCountersResetAtUTCMidnight() throws {
        let clock = ManualClock(start: Date(timeIntervalSince1970: 1_767_225_600 + 23 * 3600))  // 2026-01-01T23:00Z
        let limit = HomeAssistantRateLimit(store: InMemoryChannelState(), maximum: 2)
        for _ in 0..<2 {
            let r = try limit.reserve("tok", now: clock.now())
            #expect(r.allowed)
            _ = limit.record("tok", success: true, now: clock.now(), fallback: r.counters)
        }
        let over = try limit.reserve("tok", now: clock.now())
        #expect(!over.allowed)
        let json = limit.json(over.counters)
        #expect(json["successful"] == 2)
        #expect(json["maximum"] == 2)
        #expect(json["errors"] == 0)
        #expect(json["remaining"] == 0)
        #expect(json["resetsAt"] == "2026-01-02T00:00:00Z")
        #expect(try limit.reserve("other", now: clock.now()).allowed, "per token")
        clock.advance(by: .seconds(3600))
        let next = try limit.reserve("tok", now: clock.now())
        #expect(next.allowed)
        #expect(limit.json(next.counters)["resetsAt"] == "2026-01-03T00:00:00Z")
    }

    @Test func answersAreTheShapesHomeAssistantReads() {
        let target = DeliveryTarget(device: Device(namespace: "r", deviceId: "d", platform: "ios"), deliveryId: "x")
        #expect(HomeAssistantForwarder.answer(.delivered(target, status: 200), messageId: "m1").status == 201)
        let dead = HomeAssistantForwarder.answer(.dead(target, status: 410, reason: "Unregistered"), messageId: "m")
        #expect(dead.status == 500)
        #expect(dead.body["errorType"] == "InvalidToken")
        #expect(dead.body["message"]?.stringValue?.isEmpty == false)
        let busy = HomeAssistantForwarder.answer(.retry(target, status: 429, reason: "TooManyRequests"), messageId: "m")
        #expect(busy.status == 503)
        #expect(busy.headers["Retry-After"] == "1")
        let large = HomeAssistantForwarder.answer(
            .failed(target, status: 413, reason: "PayloadTooLarge"), messageId: "m")
        #expect(large.body["errorType"] == "PayloadTooLarge")
    }
}
