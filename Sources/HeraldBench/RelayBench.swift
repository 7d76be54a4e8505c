import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldHTTP

/// The relay benchmark's client (scripts/bench/relay.sh, BENCHMARKS.md "Relay"): `clients` concurrent
/// callers of `herald serve`'s relay endpoints, each sending back to back for `seconds`.
///
/// - `hapi`: single pushes, `POST /v1/push` with a fresh random token and a 60-byte envelope each.
/// - `openchamber`: each client is its own server (its own P-256 key, so its own serverId and replay
///   window, as thousands of self-hosted servers would be), registers `tokens` tokens
///   (`POST /v1/push/register-token`, not timed), then sends signed `POST /v1/push/send` requests
///   naming all of them.
///
/// Prints one JSON line: requests, answers 200, pushes the relay reports accepted, seconds,
/// requests/s, pushes/s, the client's peak RSS.
enum RelayBench {
    static func run(_ arguments: [String]) async throws -> String {
        guard arguments.count >= 4, let clients = Int(arguments[2]), let seconds = Double(arguments[3]) else {
            throw BenchUsage()
        }
        let kind = arguments[0]
        let base = arguments[1]
        let tokens = arguments.count > 4 ? Int(arguments[4]) ?? 100 : 100
        let client = try HTTPClient(
            configuration: HTTPClientConfiguration(
                maxConnectionsPerHost: clients, maxConcurrentStreams: max(100, clients), eventLoops: 1))
        defer { Task { await client.shutdown() } }
        switch kind {
        case "hapi":
            return try await measure(kind, clients: clients, seconds: seconds, registerSeconds: 0) { _ in
                let body: JSONValue = [
                    "platform": "ios", "token": .string(randomHex(32)),
                    "envelope": .string(Base64.encode(Array(repeating: 7, count: 60))), "priority": 10,
                ]
                let response = try await client.send(post(base + "/v1/push", body.canonicalBytes))
                return (response.status == 200, response.status == 200 ? 1 : 0)
            }
        case "openchamber":
            let started = ContinuousClock.now
            let servers = try await withThrowingTaskGroup(of: OpenChamberClient.self) { group in
                for _ in 0..<clients {
                    group.addTask { try await OpenChamberClient.register(base: base, tokens: tokens, client: client) }
                }
                var out: [OpenChamberClient] = []
                for try await s in group { out.append(s) }
                return out
            }
            let registered = elapsedSeconds(since: started)
            return try await measure(kind, clients: clients, seconds: seconds, registerSeconds: registered) { i in
                let response = try await client.send(post(base + "/v1/push/send", try servers[i].sendBody()))
                guard response.status == 200 else { return (false, 0) }
                let results = (try? JSONValue.parse(response.body))?["results"]?.arrayValue ?? []
                return (true, results.filter { $0["ok"]?.boolValue == true }.count)
            }
        default:
            throw BenchUsage()
        }
    }

    /// `herald-bench relay` was called wrongly.
    struct BenchUsage: Error {}

    /// Runs `clients` workers calling `one(worker)` back to back until `seconds` have passed.
    static func measure(
        _ kind: String, clients: Int, seconds: Double, registerSeconds: Double,
        _ one: @escaping @Sendable (Int) async throws -> (ok: Bool, pushes: Int)
    ) async throws -> String {
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int(seconds * 1000))
        let (requests, ok, pushes) = await withTaskGroup(of: (Int, Int, Int).self) { group in
            for worker in 0..<clients {
                group.addTask {
                    var (requests, ok, pushes) = (0, 0, 0)
                    while ContinuousClock.now < deadline {
                        requests += 1
                        if let r = try? await one(worker), r.ok {
                            ok += 1
                            pushes += r.pushes
                        }
                    }
                    return (requests, ok, pushes)
                }
            }
            var total = (0, 0, 0)
            for await r in group { total = (total.0 + r.0, total.1 + r.1, total.2 + r.2) }
            return total
        }
        let elapsed = elapsedSeconds(since: started)
        return String(
            format:
                #"{"protocol":"%@","clients":%d,"requests":%d,"ok":%d,"pushes":%d,"seconds":%.3f,"rps":%.0f,"pushes_per_s":%.0f,"register_seconds":%.3f,"peak_rss_kb":%d}"#,
            kind, clients, requests, ok, pushes, elapsed, Double(requests) / elapsed, Double(pushes) / elapsed,
            registerSeconds, HTTPBench.peakRSSKilobytes())
    }

    static func elapsedSeconds(since start: ContinuousClock.Instant) -> Double {
        let d = ContinuousClock.now - start
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    static func post(_ url: String, _ body: [UInt8]) -> HTTPRequest {
        HTTPRequest(url: url, headers: [HTTPHeader("content-type", "application/json")], body: body)
    }

    static func randomHex(_ bytes: Int) -> String {
        Hex.encode((0..<bytes).map { _ in UInt8.random(in: 0...255) })
    }
}

/// One openchamber server of the benchmark: its key and the tokens bound to it.
struct OpenChamberClient: Sendable {
    let key: P256PrivateKey
    let tokens: [String]

    /// A new key whose `tokens` fresh tokens are registered with the relay at `base`.
    static func register(base: String, tokens count: Int, client: HTTPClient) async throws -> OpenChamberClient {
        let me = OpenChamberClient(key: try P256PrivateKey(), tokens: (0..<count).map { _ in RelayBench.randomHex(32) })
        for token in me.tokens {
            let ts = Int64(Date().timeIntervalSince1970 * 1000)
            let input = OpenChamberSignedInput.register(ts: ts, token: token, platform: "ios")
            let body: JSONValue = [
                "token": .string(token), "platform": "ios", "publicKeyJwk": me.jwk, "ts": .number(Double(ts)),
                "sig": .string(try me.sign(input)),
            ]
            let response = try await client.send(RelayBench.post(base + "/v1/push/register-token", body.canonicalBytes))
            guard response.status == 200 else { throw RegisterFailed(status: response.status) }
        }
        return me
    }

    /// register-token was refused.
    struct RegisterFailed: Error {
        var status: Int
    }

    var jwk: JSONValue {
        let j = key.publicKey.jwk
        return ["kty": .string(j.kty), "crv": .string(j.crv), "x": .string(j.x), "y": .string(j.y)]
    }

    func sign(_ input: String) throws -> String {
        Base64.urlEncode(try key.signature(for: Array(input.utf8)).rawRepresentation)
    }

    /// A signed send to every token (a fresh `ts`; ECDSA signatures differ each time, so no two
    /// requests are a replay).
    func sendBody() throws -> [UInt8] {
        let ts = Int64(Date().timeIntervalSince1970 * 1000)
        let title = "Permission Request"
        let body: JSONValue = [
            "tokens": .array(tokens.map { .string($0) }), "title": .string(title), "body": "Claude needs approval",
            "env": "production", "badge": 3, "data": ["sessionId": "5f0c"], "publicKeyJwk": jwk,
            "ts": .number(Double(ts)),
            "sig": .string(try sign(OpenChamberSignedInput.send(ts: ts, tokens: tokens, title: title))),
        ]
        return body.canonicalBytes
    }
}
