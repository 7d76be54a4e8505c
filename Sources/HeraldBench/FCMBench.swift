import ChannelAPI
import FCMChannel
import Foundation
import HeraldHTTP
import RouterTesting

/// The FCM channel benchmark: one notification fanned out to many devices through `FCMChannel.deliver`
/// against a local sink answering the FCM send path (and the token endpoint named in the service account).
enum FCMBench {
    /// Delivers one notification to `devices` devices and times it.
    /// - Parameters:
    ///   - endpoint: The FCM base URL of the sink, for example `https://127.0.0.1:PORT`.
    ///   - caFile: The sink's CA certificate (PEM).
    ///   - serviceAccount: Path of a service-account JSON whose `token_uri` points at the sink.
    ///   - devices: Number of devices.
    ///   - batch: Targets per `deliver` call (the router hands at most 500, one chunk
    ///     after another); batches run one after another.
    /// - Returns: One JSON line: `devices`, `batch`, `delivered`, `seconds`, `rps`, `connections`,
    ///   `token_requests`, `build_ms` (building every body alone, before the timed run), `body_bytes` (mean),
    ///   `peak_rss_kb`, and the first non-delivered reason when there is one.
    static func run(endpoint: String, caFile: String, serviceAccount: String, devices: Int, batch: Int) async throws
        -> String
    {
        let http = try HTTPClient(
            configuration: HTTPClientConfiguration(caFile: caFile, coalescesWrites: benchCoalescesWrites))
        let context = ChannelContext(
            name: "fcm", http: http, clock: SystemClock(), random: SystemRandom(),
            logger: ChannelLogger(source: "fcm", sink: StandardErrorLogSink(minimumLevel: .error)),
            state: InMemoryChannelState())
        let channel = FCMChannel(
            account: try FCMServiceAccount.load(path: serviceAccount), endpoint: endpoint, context: context)
        let notification = HeraldNotification(
            id: "bench-1", type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            severity: .warning, url: "/sessions/5f0c",
            data: ["sessionId": "5f0c", "sessionName": "claude - hapi", "requestId": "r-17"], ttl: 3600,
            priority: .high)
        let targets = (0..<devices).map { i in
            DeliveryTarget(
                device: Device(
                    deviceId: "d\(i)", platform: i % 10 == 0 ? "wear" : "phone",
                    fields: ["token": .string("bench-token-\(i)-" + String(repeating: "x", count: 140))]),
                deliveryId: "dlv-\(i)")
        }
        let size = max(1, batch)
        let batches = stride(from: 0, to: targets.count, by: size).map {
            Array(targets[$0..<min($0 + size, targets.count)])
        }

        // The pure part alone: payload building and serialisation for every device, no I/O.
        let buildStarted = ContinuousClock.now
        var bytes = 0
        if let prepared = try? channel.builder.prepare(notification) {
            for t in targets {
                if case .success(let b) = channel.body(for: t, prepared) { bytes += b.count }
            }
        }
        let buildElapsed = ContinuousClock.now - buildStarted
        let buildMs =
            Double(buildElapsed.components.attoseconds) / 1e15 + Double(buildElapsed.components.seconds) * 1000

        let started = ContinuousClock.now
        // As the router's executor hands them: chunks (125 in the router), four in flight.
        let results = await ConcurrentMap.map(batches, limit: 4) { b in
            await channel.deliver(DeliveryRequest(notification: notification, targets: b))
        }.flatMap { $0 }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let delivered = results.filter { $0.outcome == .delivered }.count
        let firstProblem = results.first { $0.outcome != .delivered }?.reason ?? ""
        let tokenRequests = await channel.tokens.requestsMade
        let opened = http.connectionsOpened
        await http.shutdown()
        let rps = seconds > 0 ? Double(devices) / seconds : 0
        let problem = JSONValue.string(firstProblem).canonicalString
        return String(
            format:
                #"{"client":"herald-fcm","devices":%d,"batch":%d,"delivered":%d,"seconds":%.3f,"rps":%.0f,"connections":%d,"token_requests":%d,"build_ms":%.1f,"body_bytes":%d,"peak_rss_kb":%d,"problem":"#,
            devices, size, delivered, seconds, rps, opened, tokenRequests, buildMs, bytes / max(1, devices), peakRSS())
            + problem + "}"
    }

    /// `VmHWM` from `/proc/self/status`, in kB; 0 when unavailable.
    static func peakRSS() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
