import ChannelAPI
import Foundation
import NtfyChannel
import RouterTesting
import Testing

/// `ChannelConformance` itself: the ntfy example passes it, and each rule catches a channel that
/// breaks it (issue 16 item 6).
@Suite struct ChannelConformanceKitTests {
    @Test func ntfyConforms() async {
        let violations = await ChannelConformance(
            factory: NtfyChannel.factory, config: "server: https://ntfy.example/\ntoken: tk_conformance_secret",
            devices: [
                Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"]),
                Device(deviceId: "q", platform: "ntfy", fields: ["topic": "backups"]),
            ],
            // ntfy's publish API has no idempotency key.
            idempotencyKey: nil
        ).run()
        #expect(violations.isEmpty, "\(violations)")
    }

    /// A deliberately broken HTTP channel: each flag breaks one rule.
    struct Broken: Channel {
        var dropsSecond = false
        var randomKey = false
        var deadOn500 = false
        var logsToken = false
        var logsDeviceSecret = false
        var neverRetries = false
        var noKey = false
        var ignoresRetryAfter = false
        let token: String
        let http: any HTTPTransport
        let logger: ChannelLogger

        func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
            var out: [DeliveryResult] = []
            for (i, target) in request.targets.enumerated() {
                if dropsSecond, i == 1 { continue }
                let key = randomKey ? UUID().uuidString : target.deliveryId
                if logsToken { logger.info("sending with \(token)") }
                if logsDeviceSecret, let app = target.device?.string("appToken") { logger.info("app \(app)") }
                let headers = noKey ? [] : [HTTPHeader("idempotency-key", key)]
                let answer = await http.send(
                    all: [HTTPRequest(url: "https://broken.example/", headers: headers)], maxInFlight: 1)
                switch answer.first {
                case .success(let r) where r.status < 300: out.append(.delivered(target, status: r.status))
                case .success(let r) where r.status == 500 && deadOn500:
                    out.append(.dead(target, status: 500, reason: "x"))
                case .success(let r) where neverRetries: out.append(.failed(target, status: r.status, reason: "no"))
                case .success(let r):
                    let after =
                        ignoresRetryAfter
                        ? nil : r.header("retry-after").flatMap { Int($0) }.map { Duration.seconds($0) }
                    out.append(.retry(target, status: r.status, reason: "answered \(r.status)", retryAfter: after))
                default: out.append(neverRetries ? .failed(target, reason: "no") : .retry(target, reason: "no answer"))
                }
            }
            return out
        }
    }

    static func factory(_ configure: @escaping @Sendable (inout Broken) -> Void) -> ChannelFactory {
        ChannelFactory(
            type: "broken", defaultPlatforms: ["phone"],
            platforms: [
                PlatformDescriptor(
                    name: "phone", secretFields: ["appToken"], address: { $0.string("token") },
                    validate: { _ throws(ValidationError) in })
            ]
        ) { config, context throws(ConfigError) in
            var c = Broken(token: try config.requiredString("token"), http: context.http, logger: context.logger)
            configure(&c)
            return c
        }
    }

    static func violations(_ configure: @escaping @Sendable (inout Broken) -> Void) async -> [String] {
        await ChannelConformance(
            factory: factory(configure), config: "token: tk_broken_secret_value",
            devices: [
                Device(
                    deviceId: "a", platform: "phone", fields: ["token": "device-token-a", "appToken": "app-secret-a"]),
                Device(
                    deviceId: "b", platform: "phone", fields: ["token": "device-token-b", "appToken": "app-secret-b"]),
            ]
        ).run().map(\.rule)
    }

    @Test func aConformingChannelPasses() async {
        #expect(await Self.violations { _ in }.isEmpty)
    }

    @Test func eachRuleCatchesItsBreak() async {
        #expect(Set(await Self.violations { $0.dropsSecond = true }) == ["one-result-per-target"])
        #expect(Set(await Self.violations { $0.randomKey = true }) == ["idempotency-key"])
        #expect(Set(await Self.violations { $0.deadOn500 = true }) == ["dead-only-permanent"])
        #expect(Set(await Self.violations { $0.logsToken = true }) == ["no-secret-logged"])
        // Issue 34: a secret field only the platform's descriptor declares, a channel that never
        // retries, one that sends no idempotency key, one that drops the provider's Retry-After.
        #expect(Set(await Self.violations { $0.logsDeviceSecret = true }) == ["no-secret-logged"])
        #expect(Set(await Self.violations { $0.neverRetries = true }) == ["retry-transient"])
        #expect(Set(await Self.violations { $0.noKey = true }) == ["idempotency-key"])
        #expect(Set(await Self.violations { $0.ignoresRetryAfter = true }) == ["retry-after"])
    }

    @Test func aFactoryThatRefusesItsConfigIsReported() async {
        let violations = await ChannelConformance(
            factory: Self.factory { _ in }, config: "colour: red", devices: []
        ).run()
        #expect(violations.map(\.rule) == ["no-throw"])
    }
}
