import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTP
import RouterTesting
import WebPushChannel

/// Web Push benchmarks: encryption alone, and full channel sends to a local sink.
///
/// Wire into main.swift as:
/// `if CommandLine.arguments.dropFirst().first == "webpush" { try await WebPushBench.main(Array(CommandLine.arguments.dropFirst(2))) }`
///
/// - `webpush encrypt N PAYLOAD_BYTES [padding]`: N × (fresh ephemeral key + salt + RFC 8291 encryption) for
///   one subscriber; prints `{"op":"encrypt","n":…,"seconds":…,"per_second":…}`.
/// - `webpush send BASE_URL CAFILE N [LOOPS]`: N subscriptions at `BASE_URL/push/<i>`, delivered through
///   `WebPushChannel.deliver` in batches of 125, four in flight (as the router does;
///   `HERALD_BENCH_CHUNKS_IN_FLIGHT` changes the four, e.g. to show the loop's per-host queue at work);
///   prints `{"op":"send","n":…,"delivered":…,"seconds":…,"per_second":…}`.
enum WebPushBench {
    static func main(_ args: [String]) async throws {
        switch args.first {
        case "encrypt":
            let n = args.count > 1 ? Int(args[1]) ?? 10_000 : 10_000
            let size = args.count > 2 ? Int(args[2]) ?? 256 : 256
            let padding: WebPushPadding = args.count > 3 && args[3] == "none" ? .none : .default
            print(try encryption(count: n, payloadBytes: size, padding: padding))
        case "send":
            guard args.count >= 4, let n = Int(args[3]) else {
                print("usage: herald-bench webpush send BASE_URL CAFILE N [LOOPS]")
                return
            }
            let loops = args.count > 4 ? Int(args[4]) ?? 1 : 1
            print(try await sends(baseURL: args[1], caFile: args[2], count: n, eventLoops: loops))
        default:
            print("usage: herald-bench webpush encrypt N PAYLOAD_BYTES [bucket|none] | send BASE_URL CAFILE N [LOOPS]")
        }
    }

    /// Encrypts `count` payloads of `payloadBytes` bytes, each with a fresh ephemeral key and salt.
    static func encryption(count: Int, payloadBytes: Int, padding: WebPushPadding) throws -> String {
        let subscriber = try P256PrivateKey()
        let key = try WebPushSubscriberKey(publicKey: subscriber.publicKey, authSecret: SecureRandom.bytes(16))
        let payload = [UInt8](repeating: 0x61, count: payloadBytes)
        let record = padding.recordLength(forPayload: payloadBytes)
        let start = ContinuousClock.now
        var total = 0
        for _ in 0..<count {
            let body = try WebPushEncryptor.encrypt(
                payload, to: key, ephemeralKey: P256PrivateKey(), salt: SecureRandom.bytes(16), paddedLength: record)
            total &+= body.count
        }
        let seconds = (ContinuousClock.now - start).timeInterval
        return #"{"op":"encrypt","n":\#(count),"payload":\#(payloadBytes),"body":\#(total / max(count, 1)),"#
            + #""seconds":\#(rounded(seconds)),"per_second":\#(Int(Double(count) / seconds))}"#
    }

    /// Full sends through the channel to `count` subscriptions at the sink.
    static func sends(baseURL: String, caFile: String, count: Int, eventLoops: Int) async throws -> String {
        let http = try HTTPClient(
            configuration: .init(caFile: caFile, eventLoops: eventLoops, coalescesWrites: benchCoalescesWrites))
        let context = ChannelContext(
            name: "webpush", http: http, clock: SystemClock(), random: SystemRandom(),
            logger: ChannelLogger(source: "webpush", sink: StandardErrorLogSink()), state: InMemoryChannelState())
        let host = URLComponents(string: baseURL)?.host ?? "127.0.0.1"
        let channel = WebPushChannel(
            settings: WebPushSettings(subject: "mailto:bench@example.com", allowHosts: [host]), context: context)
        var targets: [DeliveryTarget] = []
        targets.reserveCapacity(count)
        for i in 0..<count {
            let ua = try P256PrivateKey()
            let device = Device(
                deviceId: "d\(i)", platform: "web",
                fields: [
                    "subscription": [
                        "endpoint": .string("\(baseURL)/push/\(i)"),
                        "keys": [
                            "p256dh": .string(Base64.urlEncode(ua.publicKey.x963Representation)),
                            "auth": .string(Base64.urlEncode(SecureRandom.bytes(16))),
                        ],
                    ]
                ])
            targets.append(DeliveryTarget(device: try await channel.validateRegistration(device), deliveryId: "x\(i)"))
        }
        let notification = HeraldNotification(
            id: "bench", type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            severity: .warning, url: "/sessions/5f0c", data: ["sessionId": "5f0c"])
        // Warm-up: one request opens the connection(s) and signs the VAPID token.
        _ = await channel.deliver(DeliveryRequest(notification: notification, targets: [targets[0]]))
        let batches = stride(from: 0, to: targets.count, by: 125).map {
            Array(targets[$0..<min($0 + 125, targets.count)])
        }
        let start = ContinuousClock.now
        // As the router's executor hands them: chunks of at most 125, four in flight.
        let inFlight = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_CHUNKS_IN_FLIGHT"] ?? "") ?? 4
        let results = await ConcurrentMap.map(batches, limit: max(1, inFlight)) { batch in
            await channel.deliver(DeliveryRequest(notification: notification, targets: batch))
        }.flatMap { $0 }
        let seconds = (ContinuousClock.now - start).timeInterval
        let delivered = results.filter { $0.outcome == .delivered }.count
        let firstProblem = results.first { $0.outcome != .delivered }?.reason ?? ""
        await http.shutdown()
        return #"{"op":"send","n":\#(count),"delivered":\#(delivered),"loops":\#(eventLoops),"#
            + #""seconds":\#(rounded(seconds)),"per_second":\#(Int(Double(count) / seconds))"#
            + (firstProblem.isEmpty ? "}" : #","problem":"\#(firstProblem)"}"#)
    }

    static func rounded(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
}
