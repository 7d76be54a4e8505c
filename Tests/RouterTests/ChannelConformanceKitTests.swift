import BrokenChannels
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

    static func violations(_ breaks: Set<BrokenChannel.Break>) async -> [String] {
        await ChannelConformance(
            factory: BrokenChannel.factory { $0 = breaks }, config: "token: tk_broken_secret_value",
            devices: [
                Device(
                    deviceId: "a", platform: "brokenphone",
                    fields: ["token": "device-token-a", "appToken": "app-secret-a"]),
                Device(
                    deviceId: "b", platform: "brokenphone",
                    fields: ["token": "device-token-b", "appToken": "app-secret-b"]),
            ]
        ).run().map(\.rule)
    }

    @Test func aConformingChannelPasses() async {
        #expect(await Self.violations([]).isEmpty)
    }

    @Test func eachRuleCatchesItsBreak() async {
        #expect(Set(await Self.violations([.dropsSecond])) == ["one-result-per-target"])
        #expect(Set(await Self.violations([.randomKey])) == ["idempotency-key"])
        #expect(Set(await Self.violations([.deadOn500])) == ["dead-only-permanent"])
        #expect(Set(await Self.violations([.logsToken])) == ["no-secret-logged"])
        // Issue 34: a secret field only the platform's descriptor declares, a channel that never
        // retries, one that sends no idempotency key, one that drops the provider's Retry-After.
        #expect(Set(await Self.violations([.logsDeviceSecret])) == ["no-secret-logged"])
        #expect(Set(await Self.violations([.neverRetries])) == ["retry-transient"])
        #expect(Set(await Self.violations([.noKey])) == ["idempotency-key"])
        #expect(Set(await Self.violations([.ignoresRetryAfter])) == ["retry-after"])
    }

    @Test func aFactoryThatRefusesItsConfigIsReported() async {
        let violations = await ChannelConformance(
            factory: BrokenChannel.factory(), config: "colour: red", devices: []
        ).run()
        #expect(violations.map(\.rule) == ["no-throw"])
    }
}
