import ChannelAPI
import Foundation
import HeraldChannels
import RouterTesting
import Testing

@testable import Router

/// A registration is judged by the channels that will serve the device: the enabled channels of its
/// namespace's route that serve its platform (issue 14 §3).
@Suite struct RegistrationTests {
    static func router(_ yaml: String) async throws -> Router {
        let text = "version: 1\nstore: { path: \(Harness.tempPath()) }\n" + yaml
        let config = try ConfigLoader.parse(text, environment: [:], registry: HeraldChannels.registry)
        return try await Router(
            config: config, registry: HeraldChannels.registry,
            options: RouterOptions(random: FixedRandom(), logSink: RecordingLogSink()))
    }

    static let phone = Device(deviceId: "pixel", platform: "phone", fields: ["token": "fcm-token-1"])

    static func homeAssistant(namespace: String, secret: String? = nil) -> Device {
        var fields: [String: JSONValue] = [
            "pushUrl": "https://mobile-apps.home-assistant.example/api/sendPush/android/v1", "token": "fcm:tok-1",
            "registrationInfo": [
                "appId": "io.homeassistant.companion.android", "appVersion": "2024.1", "osVersion": "34",
            ],
        ]
        if let secret { fields["secret"] = .string(secret) }
        return Device(namespace: namespace, deviceId: "ha-\(namespace)", platform: "mobile-app", fields: fields)
    }

    @Test func aConfigWithOnlySinksStoresAPhoneWithAWarning() async throws {
        let router = try await Self.router(
            "channels:\n  console: { type: log, path: /dev/null }\nroutes:\n  default:\n    - deliver: [console]\n")
        defer { Task { await router.shutdown() } }
        let result = try await router.register(Self.phone)
        #expect(result.created)
        #expect(result.channels.isEmpty)
        #expect(
            result.warnings == [
                RegistrationWarning(
                    code: .unreachable, device: "default/pixel (phone)",
                    message: "no channel in the config serves platform 'phone'")
            ])
        #expect(try router.devices().map(\.deviceId) == ["pixel"])
        #expect(router.reach(of: Self.phone).unreachableReason == "no channel in the config serves platform 'phone'")
        let plan = try router.explain(HeraldNotification(title: "t"))
        #expect(
            plan.unreachableDevices == [
                UnreachableDevice(
                    deviceId: "pixel", platform: "phone", reason: "no channel in the config serves platform 'phone'")
            ])
        #expect(plan.text.contains("unreachable: pixel (phone): no channel in the config serves platform 'phone'"))
        #expect(
            plan.json["unreachableDevices"]?[safe: 0]?["reason"] == "no channel in the config serves platform 'phone'")
    }

    /// A relay without `platforms:` serves only its protocol's platform, so a home-assistant relay
    /// routed beside a hapi relay is not given (nor does it judge) the iOS devices.
    @Test func aRelayWithoutPlatformsServesOnlyItsProtocolsPlatform() async throws {
        let router = try await Self.router(
            """
            channels:
              ha: { type: relay, protocol: home-assistant }
              hapi: { type: relay, protocol: hapi, url: "https://push.hapi.example" }
            routes:
              default:
                - deliver: [ha, hapi]
            """)
        defer { Task { await router.shutdown() } }
        #expect(router.config.channels.map(\.platforms) == [["mobile-app"], ["ios"]])
        let iphone = Device(deviceId: "iphone", platform: "ios", fields: ["token": "apns-token-1"])
        #expect(router.reach(of: iphone).channels == ["hapi"])
        #expect(router.reach(of: Self.homeAssistant(namespace: "default")).channels == ["ha"])
    }

    @Test func generalChecksStillRunForAnUnreachableDevice() async throws {
        let router = try await Self.router(
            "channels:\n  console: { type: log, path: /dev/null }\nroutes:\n  default:\n    - deliver: [console]\n")
        defer { Task { await router.shutdown() } }
        await #expect(throws: ValidationError.self) {
            try await router.register(Device(deviceId: "pixel", platform: "phone", fields: [:]))
        }
        #expect(try router.devices().isEmpty)
    }

    static let twoHomeAssistants = """
        channels:
          ha-plain: { type: relay, protocol: home-assistant, platforms: [mobile-app] }
          ha-sealed: { type: relay, protocol: home-assistant, platforms: [mobile-app], encryption: secretbox }
        routes:
          default:
            - deliver: [ha-sealed]
          namespaces:
            home:
              - deliver: [ha-plain]
        """

    @Test func onlyTheRoutesChannelsJudgeTheDevice() async throws {
        let router = try await Self.router(Self.twoHomeAssistants)
        defer { Task { await router.shutdown() } }
        // The plain relay of namespace home serves it: no secret needed, although ha-sealed encrypts.
        let home = try await router.register(Self.homeAssistant(namespace: "home"))
        #expect(home.channels == ["ha-plain"])
        #expect(home.warnings.isEmpty)
        // The default route encrypts: without a secret the device is refused, the field named.
        do {
            try await router.register(Self.homeAssistant(namespace: "default"))
            Issue.record("ha-sealed should refuse a device without secret")
        } catch let e as ValidationError {
            #expect(e.field == "secret")
        }
        #expect(try router.devices().map(\.deviceId) == ["ha-home"])
        let sealed = try await router.register(
            Self.homeAssistant(namespace: "default", secret: String(repeating: "0f", count: 32)))
        #expect(sealed.channels == ["ha-sealed"])
    }

    @Test func reasonsNameTheRouteAndTheChannels() async throws {
        let router = try await Self.router(
            """
            channels:
              console: { type: log, path: /dev/null }
              ntfy: { type: relay, protocol: hapi, url: "https://push.example.net", platforms: [ios], enabled: false }
              other: { type: relay, protocol: hapi, url: "https://push.example.net", platforms: [ios] }
            routes:
              default:
                - deliver: [console, ntfy]
              namespaces:
                ops:
                  - deliver: [console]
                lab:
                  - deliver: [other]
            """)
        defer { Task { await router.shutdown() } }
        func reason(_ ns: String) -> String? {
            router.reach(of: Device(namespace: ns, deviceId: "i", platform: "ios")).unreachableReason
        }
        #expect(reason("default") == "the channels of route default that serve platform 'ios' are disabled: ntfy")
        #expect(
            reason("ops")
                == "route namespaces.ops delivers to no channel that serves platform 'ios' (it is served by ntfy, other, which this route does not deliver to)"
        )
        #expect(reason("lab") == nil)
        #expect(router.reach(of: Device(namespace: "lab", deviceId: "i", platform: "ios")).channels == ["other"])
    }

    @Test func explainListsOnlyTheDevicesNoChannelServes() async throws {
        let h = try await Harness.make(routes: "routes:\n  default:\n    - deliver: [fcm, sink]\n")
        defer { Task { await h.router.shutdown() } }
        try await h.register("phone", "pixel")
        try await h.register("ios", "iphone")
        try await h.register("ios", "ipad", token: String(repeating: "cd", count: 32))
        try await h.register("wear", "watch")
        let plan = try h.router.explain(HeraldNotification(title: "t"))
        #expect(plan.steps[0].channels[0].devices.map(\.deviceId).sorted() == ["pixel", "watch"])
        let reason =
            "route default delivers to no channel that serves platform 'ios' (it is served by apns, which this route does not deliver to)"
        #expect(
            plan.unreachableDevices.sorted { $0.deviceId < $1.deviceId } == [
                UnreachableDevice(deviceId: "ipad", platform: "ios", reason: reason),
                UnreachableDevice(deviceId: "iphone", platform: "ios", reason: reason),
            ])
    }
}
