import ChannelAPI
import Foundation
import HeraldHTTP
import RouterTesting
import Testing

@testable import TelegramChannel

/// Channel overhead against a local nginx sink (`scripts/bench/sink.sh` with a `/bot` location that
/// answers a sendMessage result). Runs only when `HERALD_TG_BENCH="PORT CAFILE"` is set. A ManualClock
/// makes flood-limit waits free, so the figure is the channel's own cost per message (layout, callback
/// records, bucket updates, HTTP/2), not Telegram's 30 msg/s.
@Suite("Telegram benchmark")
struct TelegramBenchmark {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HERALD_TG_BENCH"] != nil))
    func sendThroughput() async throws {
        let parts = (ProcessInfo.processInfo.environment["HERALD_TG_BENCH"] ?? "").split(separator: " ")
        try #require(parts.count == 2, "HERALD_TG_BENCH must be \"PORT CAFILE\"")
        let port = String(parts[0])
        let ca = String(parts[1])
        let context = ChannelContext(
            name: "telegram", http: try HTTPClient(configuration: .init(caFile: ca)), clock: ManualClock(),
            random: SystemRandom(), logger: ChannelLogger(source: "telegram", sink: RecordingLogSink()),
            state: InMemoryChannelState())
        let channel = TelegramChannel(
            configuration: TelegramConfiguration(
                botToken: "123456789:AAHbenchTokenValue_abcdefghijklmnop", api: "https://127.0.0.1:\(port)"),
            context: context)
        let targets = (1...500).map {
            DeliveryTarget(
                device: Device(deviceId: "d\($0)", platform: "telegram", fields: ["chatId": .number(Double($0))]),
                deliveryId: "x\($0)")
        }
        for withActions in [false, true] {
            let n = Notification(
                id: "warm-\(withActions)", title: "Permission Request", body: "Claude Bash: rm -rf build",
                severity: .warning, data: ["sessionName": "claude - hapi"],
                actions: withActions
                    ? [
                        NotificationAction(id: "approve", title: "Allow"),
                        NotificationAction(id: "deny", title: "Deny"),
                    ]
                    : [])
            _ = await channel.deliver(DeliveryRequest(notification: n, targets: Array(targets.prefix(50))))
            let rounds = 4
            let start = ContinuousClock.now
            var delivered = 0
            for r in 0..<rounds {
                var m = n
                m.id = "bench-\(withActions)-\(r)"
                delivered += await channel.deliver(DeliveryRequest(notification: m, targets: targets)).filter {
                    $0.outcome == .delivered
                }.count
            }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print(
                "telegram bench actions=\(withActions): \(delivered) messages in \(seconds) s = "
                    + "\(Int(Double(delivered) / seconds)) msg/s")
            #expect(delivered == rounds * targets.count)
        }
    }
}
