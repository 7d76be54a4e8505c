import ChannelAPI
import Foundation
import HeraldChannels
import Router
import RouterTesting
import Testing

/// Device registry rules (contract §3).
@Suite struct RegistryTests {
    static let routes = "routes:\n  default:\n    - deliver: [apns, fcm, webpush, telegram]\n"

    @Test func upsertReplacesTokenForSameKey() async throws {
        let h = try await Harness.make(routes: Self.routes)
        let first = try await h.router.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "t1"]))
        #expect(first.created)
        let second = try await h.router.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "t2"]))
        #expect(!second.created)
        let devices = try h.router.devices()
        #expect(devices.count == 1)
        #expect(devices[0].token == "t2")
    }

    @Test func samePhysicalIdOnTwoPlatformsIsTwoDevices() async throws {
        let h = try await Harness.make(routes: Self.routes)
        try await h.router.register(Device(deviceId: "d", platform: "phone", fields: ["token": "t1"]))
        try await h.router.register(Device(deviceId: "d", platform: "wear", fields: ["token": "t2"]))
        #expect(try h.router.devices().count == 2)
        #expect(try h.router.unregister(deviceId: "d", platform: "wear") == 1)
        #expect(try h.router.devices().map(\.platform) == ["phone"])
    }

    @Test func tokenMovesBetweenNamespaces() async throws {
        let h = try await Harness.make(routes: Self.routes)
        try await h.router.register(Device(namespace: "a", deviceId: "p", platform: "phone", fields: ["token": "tok"]))
        let moved = try await h.router.register(
            Device(namespace: "b", deviceId: "p", platform: "phone", fields: ["token": "tok"]))
        #expect(moved.moved == ["a/p/phone"])
        #expect(try h.router.devices(namespace: "a").isEmpty)
        #expect(try h.router.devices(namespace: "b").count == 1)
    }

    @Test func unregisterByToken() async throws {
        let h = try await Harness.make(routes: Self.routes)
        try await h.router.register(Device(deviceId: "p", platform: "phone", fields: ["token": "tok"]))
        #expect(try h.router.unregister(token: "nope") == 0)
        #expect(try h.router.unregister(token: "tok") == 1)
        #expect(try h.router.devices().isEmpty)
    }

    struct Bad: Sendable, CustomStringConvertible {
        let json: String
        let field: String
        var description: String { json }
    }

    static let bad: [Bad] = [
        Bad(json: #"{"platform":"phone","token":"x"}"#, field: "deviceId"),
        Bad(json: #"{"deviceId":"d","token":"x"}"#, field: "platform"),
        Bad(json: #"{"deviceId":"d","platform":"phone"}"#, field: "token"),
        Bad(json: #"{"deviceId":"d","platform":"phone","token":7}"#, field: "token"),
        Bad(json: #"{"deviceId":"d","platform":"ios","token":"not-hex"}"#, field: "token"),
        Bad(json: #"{"deviceId":"d","platform":"ios","token":"abcd","pushKey":"c2hvcnQ="}"#, field: "pushKey"),
        Bad(json: #"{"deviceId":"d","platform":"ios","token":"abcd","environment":"staging"}"#, field: "environment"),
        Bad(
            json:
                #"{"deviceId":"d","platform":"web","subscription":{"endpoint":"http://x/1","keys":{"p256dh":"a","auth":"b"}}}"#,
            field: "subscription.endpoint"),
        Bad(
            json: #"{"deviceId":"d","platform":"web","subscription":{"endpoint":"https://x/1"}}"#,
            field: "subscription.keys"),
        Bad(json: #"{"deviceId":"d","platform":"telegram"}"#, field: "chatId"),
        Bad(json: #"{"deviceId":"d","platform":"phone","token":"x","colour":"red"}"#, field: "colour"),
        Bad(json: #"{"namespace":"bad ns","deviceId":"d","platform":"phone","token":"x"}"#, field: "namespace"),
        Bad(json: String(repeating: "x", count: 3), field: "device"),
        Bad(
            json: #"{"deviceId":"\#(String(repeating: "d", count: 129))","platform":"phone","token":"x"}"#,
            field: "deviceId"),
    ]

    @Test(arguments: bad) func badRegistrationNamesFieldAndStoresNothing(_ b: Bad) async throws {
        let h = try await Harness.make(routes: Self.routes)
        do {
            let device = try Device(jsonText: b.json)
            try await h.router.register(device)
            Issue.record("expected refusal")
        } catch let e as ValidationError {
            #expect(e.field == b.field, "\(e)")
        }
        #expect(try h.router.devices().isEmpty)
    }

    @Test func platformWithoutChannelIsRefused() async throws {
        let h = try await Harness.make(routes: "routes:\n  default:\n    - deliver: [apns]\n")
        await #expect(throws: ValidationError.self) {
            try await h.router.register(Device(deviceId: "x", platform: "pulse", fields: [:]))
        }
    }

    @Test func listingsNeverShowSecrets() throws {
        let d = try Device(
            jsonText:
                #"{"deviceId":"i","platform":"ios","token":"00112233445566778899aabbccddeeff","pushKey":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}"#
        )
        let text = d.redactedJSON.canonicalString
        #expect(!text.contains("00112233445566778899aabbccddeeff"))
        #expect(!text.contains("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="))
        // Issue 36: the push token is shortened (operators tell devices apart by it); the key shows nothing.
        #expect(d.redactedJSON["token"] == "0011…eeff")
        #expect(d.redactedJSON["pushKey"] == "‹redacted›")
        #expect(!text.contains("AAEC") && !text.contains("Hh8="))
    }

    /// Issue 36: every secret field but a device address (push token, Web Push endpoint) is redacted
    /// in full, also the fields a platform declares secret, at any depth.
    @Test func secretFieldsAreRedactedInFullAndAddressesShortened() throws {
        let d = try Device(
            jsonText: #"""
                {"deviceId":"w","platform":"web","secret":"s3cr3t-s3cr3t-s3cr3t-s3cr3t",
                 "subscription":{"endpoint":"https://push.example.net/send/0123456789abcdef",
                                 "keys":{"p256dh":"BOrp256dhp256dhp256dhp256dhXYZW","auth":"authauthauthauth1234"}},
                 "registrationInfo":{"webhookId":"a1b2c3d4e5f60718293a4b5c6d7e8f90aabbccddeeff00112233445566778899"}}
                """#)
        let o = d.redactedJSON(extraSecretFields: ["webhookId"])
        #expect(o["secret"] == "‹redacted›")
        #expect(o["subscription"]?["endpoint"] == "http…cdef")
        #expect(o["subscription"]?["keys"] == ["p256dh": "‹redacted›", "auth": "‹redacted›"])
        #expect(o["registrationInfo"]?["webhookId"] == "‹redacted›")
        #expect(Redaction.field("token", "abcdefabcdefabcdefabcdef") == "abcd…cdef")
        #expect(Redaction.field("pushKey", "abcdefabcdefabcdefabcdef") == "‹redacted›")
    }
}

@Suite struct DeviceCacheTests {
    @Test func cacheSeesWritesFromAnotherConnection() throws {
        let path = Harness.tempPath()
        let a = try SQLiteStore(path: path)
        let b = try SQLiteStore(path: path)
        let now = Date()
        _ = try a.upsertDevice(Device(deviceId: "one", platform: "phone", fields: ["token": "t1"]), now: now)
        #expect(try a.devices(namespace: "default").map(\.deviceId) == ["one"])
        // Another process registers a device: the cached list must not hide it.
        _ = try b.upsertDevice(Device(deviceId: "two", platform: "phone", fields: ["token": "t2"]), now: now)
        #expect(try a.devices(namespace: "default").map(\.deviceId) == ["one", "two"])
        #expect(try b.removeDevice(namespace: "default", deviceId: "one", platform: nil) == 1)
        #expect(try a.devices(namespace: "default").map(\.deviceId) == ["two"])
        // Own writes invalidate too.
        _ = try a.upsertDevice(Device(deviceId: "two", platform: "phone", fields: ["token": "t3"]), now: now)
        #expect(try a.devices(namespace: "default").first?.token == "t3")
    }

    @Test func uuidsAreWellFormed() {
        let v4 = UUIDGenerator.make(3, random: SystemRandom())
        let v7 = UUIDGenerator.makeTimeOrdered(3, at: 1_767_225_600_000, random: SystemRandom())
        for id in v4 + v7 {
            #expect(UUID(uuidString: id) != nil, "\(id)")
        }
        #expect(v4.allSatisfy { Array($0)[14] == "4" })
        #expect(v7.allSatisfy { Array($0)[14] == "7" && $0.hasPrefix("019b7") })
        #expect(v7 == v7.sorted())
        #expect(Set(v4 + v7).count == 6)
    }

    /// A series (numbered by the database) is version 7 with the RFC 9562 variant, carries its
    /// millisecond, and its members are distinct and in order, across the 12-digit counter too.
    @Test func uuidSeriesMembersAreWellFormedDistinctAndOrdered() {
        let series = UUIDGenerator.timeOrderedSeries(at: 1_767_225_600_000, random: SystemRandom())
        #expect(series.prefix.count == 24 && series.prefix.hasPrefix("019b7") && series.prefix.hasSuffix("-"))
        #expect(series.base >= 0 && series.base < 1 << 48)
        let members = (1...1_000).map {
            UUIDGenerator.seriesMember(prefix: series.prefix, base: series.base, Int64($0))
        }
        for id in members {
            #expect(UUID(uuidString: id) != nil, "\(id)")
            let chars = Array(id)
            #expect(chars.count == 36 && chars[14] == "7" && "89ab".contains(chars[19]), "\(id)")
        }
        #expect(Set(members).count == members.count)
        let low = UUIDGenerator.seriesMember(prefix: series.prefix, base: 0, 1)
        #expect(low.hasSuffix("-000000000001"))
        let wrapped = UUIDGenerator.seriesMember(prefix: series.prefix, base: (1 << 48) - 1, 1)
        #expect(wrapped.hasSuffix("-000000000000"), "the counter is 48 bits and wraps")
    }

    /// Issue 34 §4: a second registration of a type or a platform is refused, not a silent replacement.
    @Test func aSecondRegistrationOfATypeOrPlatformIsRefused() throws {
        var registry = HeraldChannels.registry
        #expect(throws: RegistryConflict(kind: .type, name: "apns")) {
            try registry.register(ChannelFactory(type: "apns", defaultPlatforms: ["ios"]) { _, _ in LogStub() })
        }
        let stealsIOS = ChannelFactory(
            type: "my-apns", defaultPlatforms: ["ios"],
            platforms: [
                PlatformDescriptor(name: "ios", address: { _ in nil }, validate: { _ throws(ValidationError) in })
            ]
        ) { _, _ in LogStub() }
        #expect(throws: RegistryConflict(kind: .platform, name: "ios")) { try registry.register(stealsIOS) }
        #expect(registry.factory(for: "my-apns") == nil, "a refused registration adds nothing")
        #expect(throws: RegistryConflict.self) {
            try registry.register(
                platform: PlatformDescriptor(
                    name: "web", address: { _ in nil }, validate: { _ throws(ValidationError) in }))
        }
        // The built-in list is distinct, so HeraldChannels.registry holds all of it.
        let builtIn = try ChannelRegistry(HeraldChannels.factories)
        #expect(builtIn.types == HeraldChannels.registry.types)
        #expect(HeraldChannels.registry.types.count == HeraldChannels.factories.count)
        #expect(RegistryConflict(kind: .type, name: "ntfy").description == "channel type 'ntfy' is already registered")
    }

    struct LogStub: Channel {
        func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] { [] }
    }
}
