import APNsChannel
import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTP
import RouterTesting

/// The APNs fan-out benchmark: one notification to many devices through ``APNsChannel`` against a
/// local HTTP/2 TLS sink answering `200` with an `apns-id` (nginx, `scripts/bench/sink.sh`).
///
/// What is measured is the whole channel path per device: payload and headers, the shared provider
/// token, `apns-id`, the request through the shared HTTP client, and response classification.
enum APNsBench {
    /// Runs the fan-out.
    /// - Parameters:
    ///   - baseURL: The sink's base URL, for example `https://127.0.0.1:PORT` (requests go to `/3/device/<token>`).
    ///   - caFile: The sink's CA certificate (PEM).
    ///   - devices: Number of devices.
    ///   - batchSize: Devices per `deliver` call (the router hands out at most 125, four at once).
    ///   - concurrentBatches: `deliver` calls running at once (each keeps up to 100 requests in flight).
    ///   - connections: Most connections per event loop to the host.
    ///   - eventLoops: HTTP client event loops.
    /// - Returns: One JSON line: `devices`, `delivered`, `seconds`, `rps`, `batch`, `batches_in_flight`,
    ///   `connections` (opened), `loops`, `peak_rss_kb`.
    static func run(
        baseURL: String, caFile: String, devices: Int = 10_000, batchSize: Int = 125, concurrentBatches: Int = 4,
        connections: Int = 4, eventLoops: Int = 1
    ) async throws -> String {
        let http = try HTTPClient(
            configuration: HTTPClientConfiguration(
                caFile: caFile, maxConnectionsPerHost: max(1, connections), maxConcurrentStreams: 100,
                eventLoops: max(1, eventLoops), coalescesWrites: benchCoalescesWrites))
        let context = ChannelContext(
            name: "apns", http: http, clock: SystemClock(), random: SystemRandom(),
            logger: ChannelLogger(source: "apns", sink: StandardErrorLogSink(minimumLevel: .warning)),
            state: InMemoryChannelState())
        let channel = APNsChannel(
            configuration: APNsConfiguration(
                keyID: "BENCHKEY01", teamID: "BENCHTEAM1", topic: "com.example.bench",
                endpoints: [.production: baseURL, .sandbox: baseURL]),
            key: try P256PrivateKey(), context: context)
        let notification = HeraldNotification(
            type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            url: "/sessions/5f0c", data: ["sessionId": "5f0c", "sessionName": "claude - hapi", "requestId": "r-17"],
            actions: [.init(id: "approve", title: "Allow"), .init(id: "deny", title: "Deny", destructive: true)],
            badge: 3, ttl: 3600)
        let targets = (0..<devices).map { i in
            let token = SecureRandom.bytes(32).map { b in (b < 16 ? "0" : "") + String(b, radix: 16) }.joined()
            return DeliveryTarget(
                device: Device(deviceId: "bench-\(i)", platform: "ios", fields: ["token": .string(token)]),
                deliveryId: UUID().uuidString.lowercased())
        }
        let batches = stride(from: 0, to: targets.count, by: max(1, batchSize)).map {
            Array(targets[$0..<min($0 + max(1, batchSize), targets.count)])
        }

        // Warm-up (not timed): one delivery opens the connection and has the provider token accepted.
        let warm = DeliveryTarget(
            device: Device(deviceId: "warm", platform: "ios", fields: ["token": "00"]), deliveryId: UUID().uuidString)
        _ = await channel.deliver(DeliveryRequest(notification: notification, targets: [warm]))

        let started = ContinuousClock.now
        let delivered = await withTaskGroup(of: Int.self) { group in
            var next = 0
            var total = 0
            func add() {
                let batch = batches[next]
                next += 1
                group.addTask {
                    let results = await channel.deliver(DeliveryRequest(notification: notification, targets: batch))
                    return results.filter { $0.outcome == .delivered }.count
                }
            }
            while next < batches.count, next < max(1, concurrentBatches) { add() }
            while let n = await group.next() {
                total += n
                if next < batches.count { add() }
            }
            return total
        }
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let opened = http.connectionsOpened
        await http.shutdown()
        return String(
            format:
                #"{"client":"herald-apns","devices":%d,"delivered":%d,"seconds":%.3f,"rps":%.0f,"batch":%d,"batches_in_flight":%d,"connections":%d,"loops":%d,"peak_rss_kb":%d}"#,
            devices, delivered, seconds, seconds > 0 ? Double(devices) / seconds : 0, batchSize, concurrentBatches,
            opened, eventLoops, peakRSS())
    }

    /// `herald-bench apns BASEURL CAFILE [DEVICES [BATCH [BATCHES_IN_FLIGHT [CONNECTIONS [LOOPS]]]]]`.
    static func run(arguments: [String]) async throws -> String {
        guard arguments.count >= 2 else {
            return "usage: herald-bench apns BASEURL CAFILE [DEVICES [BATCH [BATCHES_IN_FLIGHT [CONNECTIONS [LOOPS]]]]]"
        }
        func int(_ i: Int, _ d: Int) -> Int { arguments.count > i ? Int(arguments[i]) ?? d : d }
        return try await run(
            baseURL: arguments[0], caFile: arguments[1], devices: int(2, 10_000), batchSize: int(3, 125),
            concurrentBatches: int(4, 4), connections: int(5, 4), eventLoops: int(6, 1))
    }

    /// VmHWM of this process in KB.
    private static func peakRSS() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return 0
    }
}
