import ChannelAPI
import ChannelTesting
import Foundation
import HeraldChannels
import HeraldSync
import LocalChannel
import Router
import Testing

/// Issue 35: the `local` channel over the in-process ``LocalStreamHub``, without a server: outcomes
/// and their order on a manual clock, the relay's messages, the config keys and the shipped example.
@Suite struct LocalChannelTests {
    static let device = LocalStreamHub.DeviceKey(namespace: "default", deviceId: "p1")

    static func push(_ delivery: String, notification: String = "n-1") -> LocalPush {
        LocalPush(
            namespace: "default", deviceId: "p1", platform: "phone", notificationId: notification,
            deliveryId: delivery, payload: ["id": .string(notification)])
    }

    @Test func noStreamIsNotConnectedAtOnce() async {
        let hub = LocalStreamHub(clock: ManualClock())
        #expect(await hub.push(Self.push("d-1"), confirmWithin: .seconds(10)) == .notConnected)
        #expect(hub.stats.outcomes[.notConnected] == 1)
    }

    @Test func aConfirmationEndsThePushDelivered() async throws {
        // The system clock and a window no test waits for: only the confirmation can end it.
        let hub = LocalStreamHub(clock: SystemClock())
        let written = Locked<[LocalPush]>([])
        _ = hub.attach(Self.device) { p in
            written.withLock { $0.append(p) }
            return true
        }
        let pushing = Task { await hub.push(Self.push("d-1"), confirmWithin: .seconds(600)) }
        while written.withLock({ $0.isEmpty }) { await Task.yield() }
        #expect(hub.confirm(namespace: "default", notificationId: "n-1", deviceId: "other") == 0)
        #expect(hub.confirm(namespace: "default", notificationId: "n-1", deviceId: "p1") == 1)
        #expect(await pushing.value == .confirmed)
        // Late: nothing waits any more.
        #expect(hub.confirm(namespace: "default", notificationId: "n-1", deviceId: "p1") == 0)
        #expect(hub.stats.confirmBuckets.reduce(0, +) == 1)
    }

    @Test func silenceIsNotConfirmedAfterTheWindow() async {
        let clock = ManualClock()
        let hub = LocalStreamHub(clock: clock)
        _ = hub.attach(Self.device) { _ in true }
        #expect(await hub.push(Self.push("d-1"), confirmWithin: .seconds(10)) == .notConfirmed)
        #expect(clock.sleeps == [.seconds(10)])
    }

    @Test func aClosingStreamEndsThePushAtOnce() async {
        let hub = LocalStreamHub(clock: SystemClock())
        let written = Locked(0)
        let id = hub.attach(Self.device) { _ in
            written.withLock { $0 += 1 }
            return true
        }
        let pushing = Task { await hub.push(Self.push("d-1"), confirmWithin: .seconds(600)) }
        while written.withLock({ $0 == 0 }) { await Task.yield() }
        hub.detach(id)
        #expect(await pushing.value == .streamClosed)
        #expect(hub.connections.isEmpty)
    }

    @Test func aRefusedWriteIsStreamClosed() async {
        let hub = LocalStreamHub(clock: ManualClock())
        _ = hub.attach(Self.device) { _ in false }
        #expect(await hub.push(Self.push("d-1"), confirmWithin: .seconds(10)) == .streamClosed)
    }

    @Test func relayMessagesRoundTrip() {
        let messages: [LocalRelayMessage] = [
            .push(holder: "h", Self.push("d-1")),
            .confirm(namespace: "default", notificationId: "n-1", deviceId: "p1"),
            .closed(deliveryId: "d-1", outcome: .streamClosed),
        ]
        for m in messages { #expect(LocalRelayMessage(json: m.json) == m) }
        #expect(LocalRelayMessage(json: ["t": "other"]) == nil)
    }

    @Test func thePayloadCarriesTheIdAndTheCloudDataMap() {
        let n = HeraldNotification(id: "n-9", title: "Build", body: "done", data: ["k": "v"])
        let p = LocalChannel.payload(n, deliveryId: "d-9", platform: "phone")
        #expect(p["id"]?.stringValue == "n-9")
        #expect(p["deliveryId"]?.stringValue == "d-9")
        #expect(p["data"]?["heraldDeliveryId"]?.stringValue == "d-9")
        #expect(p["data"]?["k"]?.stringValue == "v")
        #expect(p["data"]?["title"]?.stringValue == "Build")
        #expect(p["notification"]?["id"]?.stringValue == "n-9")
    }

    @Test(arguments: ["0s", "26s", "1h"])
    func confirmOutOfRangeIsAConfigError(_ value: String) throws {
        let cli = try CLI(
            configText: """
                version: 1
                channels:
                  local: { type: local, confirm: \(value) }
                routes:
                  default:
                    - deliver: local
                """)
        let r = try cli.run(["validate", "--offline"])
        #expect(r.code == 65, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("herald.yaml:3:34"), "\(r.stderr)")
        #expect(r.stderr.contains("confirm must be from 1ms to 25s"), "\(r.stderr)")
    }

    @Test func theShippedLocalFirstConfigValidates() throws {
        let cli = try CLI(configText: "")
        let path = ConfigCLITests.root.appendingPathComponent("config/local-first.yaml").path
        let r = try cli.run(["validate", "--offline", "-c", path], env: ConfigCLITests.noSecrets)
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("ok: 3 channels"), "\(r.stdout)")
        let graph = try cli.run(["graph", "-c", path, "--format", "mermaid"], env: ConfigCLITests.noSecrets)
        #expect(graph.code == 0, "\(graph.stderr)")
        #expect(graph.stdout.contains("local"))
    }
}
