import ChannelAPI
import Foundation
import HeraldChannels
import RouterTesting

/// `herald-bench exec TARGETS ROUNDS`: an exec channel (`type: exec`) whose child, a few lines of
/// Python, answers every batch at once with one `delivered` per target. Each round is one
/// `deliver` of TARGETS targets through the channel: the request line written, the answer line
/// read and parsed, the results matched to the batch. The figure is notifications (targets) per
/// second over all rounds, after one warm-up round that also starts the child.
enum ExecBench {
    /// The child: reads request lines, answers the handshake, a `deliver` with every target
    /// delivered, `shutdown` by exiting.
    static let child = #"""
        import json, sys
        for line in sys.stdin:
            req = json.loads(line)
            m, rid = req.get("method"), req.get("id")
            if m == "handshake":
                out = {"id": rid, "result": {"protocol": 1, "platforms": [{"name": "bench", "secretFields": ["key"]}],
                       "configKeys": []}}
            elif m == "deliver":
                out = {"id": rid, "result": {"results": [{"deliveryId": t["deliveryId"], "outcome": "delivered",
                       "status": 200} for t in req["targets"]]}}
            elif m == "shutdown":
                sys.stdout.write(json.dumps({"id": rid, "result": {}}) + "\n"); sys.stdout.flush(); break
            else:
                out = {"id": rid, "error": {"message": "unknown method"}}
            sys.stdout.write(json.dumps(out, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        """#

    /// Runs the benchmark; returns one line of figures.
    static func run(targets count: Int, rounds: Int) async throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-exec-bench-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = dir.appendingPathComponent("child.py")
        try child.write(to: script, atomically: true, encoding: .utf8)
        let config = try TestConfig.channel(
            "{ platforms: [bench], command: [python3, \"\(script.path)\"], timeout: 60s }", name: "bench")
        let context = ChannelContext(
            name: "bench", http: ScriptedTransport(), clock: SystemClock(), random: SystemRandom(),
            logger: ChannelLogger(source: "bench", sink: StandardErrorLogSink(minimumLevel: .warning)),
            state: InMemoryChannelState())
        guard let factory = HeraldChannels.registry.factory(for: "exec") else { return "no exec channel type" }
        let channel = try factory.make(config, context)
        let notification = HeraldNotification(
            id: "bench-1", type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            severity: .warning, url: "/sessions/5f0c", data: ["sessionId": "5f0c", "requestId": "r-17"])
        let targets = (0..<count).map { i in
            DeliveryTarget(
                device: Device(
                    deviceId: "d\(i)", platform: "bench",
                    fields: ["key": .string("k-\(i)-0123456789abcdef"), "room": .string("!room\(i):example.org")]),
                deliveryId: String(format: "0193a5c0-0000-7000-8000-%012d", i))
        }
        let request = DeliveryRequest(notification: notification, targets: targets)
        let warm = await channel.deliver(request)
        guard warm.count == count, warm.allSatisfy({ $0.outcome == .delivered }) else {
            await channel.shutdown()
            return "warm-up failed: \(warm.first?.reason ?? "no results")"
        }
        let clock = ContinuousClock()
        var delivered = 0
        let elapsed = await clock.measure {
            for _ in 0..<rounds {
                delivered += await channel.deliver(request).count { $0.outcome == .delivered }
            }
        }
        await channel.shutdown()
        let seconds = elapsed.timeInterval
        let rate = Double(delivered) / seconds
        return String(
            format: "exec: %d targets x %d rounds, %d delivered in %.3f s = %.0f notifications/s (%.1f ms per batch)",
            count, rounds, delivered, seconds, rate, seconds * 1000 / Double(rounds))
    }
}
