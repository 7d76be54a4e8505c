import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldHTTP

/// The Pulse relay benchmark's client (scripts/bench/pulse.sh, BENCHMARKS.md "Pulse Relay"):
/// `herald-bench relay pulse BASEURL CLIENTS SECONDS [PACED_RATE] [SITES] [REFS]`.
///
/// Setup, not timed: each of `clients` clients registers its own phone (`POST /v1/pulse/devices`),
/// mints a key for each of `sites` sites (`POST /v1/pulse/devices/{deviceId}/sites`) and reports an
/// activity token for each of `refs` refs per site (`POST …/activities/{ref}`), so every update has
/// a Live Activity to go to.
///
/// Then each client sends signed `update` pushes (`POST /v1/devices/{deviceId}/push`, `X-Pulse-Source`,
/// `X-Pulse-Auth: v2` HMAC) over its refs in turn, for `seconds`: first back to back (full rate), then,
/// when `pacedRate` > 0, at `pacedRate` pushes/s over all clients. The relay's limits stay the guide's:
/// a client never sends to a ref within 1.05 s of that ref's last answer (it waits, and reports the
/// time waited), and with enough sites the 600 pushes an hour per site and phone are not reached.
///
/// Prints one JSON line per run: requests, answers 200, 429s, other refusals and errors, seconds,
/// pushes/s, the latency of the answers 200 (p50/p90/p99/max in ms; full rate: from sending; paced:
/// from the scheduled time, so falling behind shows), seconds the clients waited for a ref, the
/// setup's seconds, the client's peak RSS.
enum PulseRelayBench {
    /// `BASEURL CLIENTS SECONDS [PACED_RATE] [SITES] [REFS]`: the setup, the full-rate run and, when
    /// PACED_RATE > 0, the paced run; one JSON line each.
    static func run(_ arguments: [String]) async throws -> String {
        guard arguments.count >= 3, let clients = Int(arguments[1]), clients > 0, let seconds = Double(arguments[2])
        else { throw RelayBench.BenchUsage() }
        let base = arguments[0]
        let pacedRate = arguments.count > 3 ? Double(arguments[3]) ?? 0 : 0
        let sites = max(1, arguments.count > 4 ? Int(arguments[4]) ?? 4 : 4)
        let refs = max(1, arguments.count > 5 ? Int(arguments[5]) ?? 16 : 16)
        let client = try HTTPClient(
            configuration: HTTPClientConfiguration(
                maxConnectionsPerHost: clients, maxConcurrentStreams: max(100, clients), eventLoops: 1))
        defer { Task { await client.shutdown() } }

        let started = ContinuousClock.now
        let phones = try await withThrowingTaskGroup(of: PulsePhoneClient.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    try await PulsePhoneClient.setUp(base: base, sites: sites, refs: refs, client: client)
                }
            }
            var out: [PulsePhoneClient] = []
            for try await p in group { out.append(p) }
            return out
        }
        let setup = RelayBench.elapsedSeconds(since: started)
        var lines = [
            try await measure(
                "full", phones: phones, seconds: seconds, interval: nil, revisionBase: 0, base: base, setup: setup)
        ]
        if pacedRate > 0 {
            // The paced run starts with fresh refs: let the full run's last updates leave their second.
            try await Task.sleep(for: .milliseconds(1100))
            let interval = Duration.nanoseconds(Int64(Double(clients) / pacedRate * 1e9))
            lines.append(
                try await measure(
                    "paced", phones: phones, seconds: seconds, interval: interval, revisionBase: 1_000_000, base: base,
                    setup: setup))
        }
        return lines.joined(separator: "\n")
    }

    /// One worker's counts and latencies (ms).
    struct Tally: Sendable {
        var requests = 0
        var ok = 0
        var limited = 0
        var refused = 0
        var failed = 0
        var waited = 0.0
        var latencies: [Double] = []
    }

    /// Runs one worker per phone for `seconds`: back to back when `interval` is nil, else one push
    /// every `interval` per worker (a fixed schedule, latency counted from the scheduled time). Every
    /// ref's revisions start above `revisionBase`, so a later run stays above an earlier one's. Each
    /// worker is a thread with its own keep-alive connection (``RawHTTPConnection``).
    static func measure(
        _ mode: String, phones: [PulsePhoneClient], seconds: Double, interval: Duration?, revisionBase: Int64,
        base: String, setup: Double
    ) async throws -> String {
        guard RawHTTPConnection(base: base) != nil else { throw RelayBench.BenchUsage() }
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int(seconds * 1000))
        let tallies = await onThreads(phones.count) { worker in
            let phone = phones[worker]
            guard let connection = RawHTTPConnection(base: base) else { return Tally() }
            var t = Tally()
            var ids: [String] = []
            // Revisions go on from the previous run's (each run sends fewer than a million per ref).
            var refs = phone.schedule.map { ref in
                var r = ref
                r.revision = revisionBase
                return r
            }
            // Spread the workers' first sends over one interval.
            var next = started + (interval.map { $0 / phones.count * worker } ?? .zero)
            while true {
                if interval != nil { sleep(until: next) }
                guard ContinuousClock.now < deadline else { break }
                // The guide's 1 update a second per ref: wait for the least recently used ref.
                var ref = refs.removeFirst()
                if let ready = ref.lastAnswer.map({ $0 + .milliseconds(1050) }), ready > ContinuousClock.now {
                    let waitStart = ContinuousClock.now
                    sleep(until: ready)
                    t.waited += RelayBench.elapsedSeconds(since: waitStart)
                }
                if ids.isEmpty { ids = UUIDGenerator.make(256, random: SystemRandom()) }
                ref.revision += 1
                let request = phone.push(ref, requestId: ids.removeLast(), connection: connection)
                let sent = interval == nil ? ContinuousClock.now : min(next, ContinuousClock.now)
                t.requests += 1
                let status = connection.roundTrip(request)
                let answered = ContinuousClock.now
                ref.lastAnswer = answered
                refs.append(ref)
                switch status {
                case 200?:
                    t.ok += 1
                    let d = answered - sent
                    t.latencies.append(Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
                case 429?: t.limited += 1
                case nil: t.failed += 1
                default: t.refused += 1
                }
                if let interval { next += interval }
            }
            return t
        }
        var total = Tally()
        for t in tallies {
            total.requests += t.requests
            total.ok += t.ok
            total.limited += t.limited
            total.refused += t.refused
            total.failed += t.failed
            total.waited += t.waited
            total.latencies += t.latencies
        }
        let elapsed = RelayBench.elapsedSeconds(since: started)
        let sorted = total.latencies.sorted()
        func pct(_ p: Double) -> Double {
            sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        return String(
            format:
                #"{"protocol":"pulse","mode":"%@","clients":%d,"requests":%d,"ok":%d,"status_429":%d,"refused":%d,"failed":%d,"seconds":%.3f,"pushes_per_s":%.0f,"p50_ms":%.2f,"p90_ms":%.2f,"p99_ms":%.2f,"max_ms":%.2f,"ref_wait_s":%.1f,"setup_seconds":%.3f,"peak_rss_kb":%d}"#,
            mode, phones.count, total.requests, total.ok, total.limited, total.refused, total.failed, elapsed,
            Double(total.ok) / elapsed, pct(0.5), pct(0.9), pct(0.99), sorted.last ?? 0, total.waited, setup,
            HTTPBench.peakRSSKilobytes())
    }

    /// Runs `body(0)` … `body(count - 1)` each on a thread of its own (blocking I/O stays off the
    /// concurrency pool) and returns their results once all have returned.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Tally) async -> [Tally] {
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var tallies: [Tally] = []
        }
        let results = Results()
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            let thread = Thread {
                let t = body(i)
                results.lock.withLock { results.tallies.append(t) }
                group.leave()
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { done.resume() }
        }
        return results.lock.withLock { results.tallies }
    }

    /// Blocks the calling thread until `instant` (returns at once when it has passed).
    static func sleep(until instant: ContinuousClock.Instant) {
        let left = instant - ContinuousClock.now
        guard left > .zero else { return }
        var ts = timespec(
            tv_sec: Int(left.components.seconds), tv_nsec: Int(left.components.attoseconds / 1_000_000_000))
        var rest = timespec()
        while nanosleep(&ts, &rest) != 0, errno == EINTR { ts = rest }
    }
}

/// One phone of the benchmark: its deviceId, its sites' keys, and the refs it pushes to.
struct PulsePhoneClient: Sendable {
    /// One site on this phone: its sourceId and pushKey.
    struct Site: Sendable {
        var sourceId: String
        var pushKey: [UInt8]
    }

    /// One Live Activity: its site, its ref, the last revision sent and when its last answer came.
    struct Ref: Sendable {
        var site: Site
        var name: String
        var revision: Int64 = 0
        var lastAnswer: ContinuousClock.Instant?
    }

    let deviceId: String
    /// Every ref of every site, in the order they are pushed to (site by site, so consecutive pushes
    /// go to different sites' ledgers when there are several).
    let schedule: [Ref]

    /// Registers a phone, mints `sites` site keys and reports an activity token for `refs` refs each.
    static func setUp(base: String, sites: Int, refs: Int, client: HTTPClient) async throws -> PulsePhoneClient {
        let registration: JSONValue = [
            "pushToStartToken": .string(RelayBench.randomHex(32)), "environment": "production",
        ]
        let phone = try await call(
            client, RelayBench.post(base + "/v1/pulse/devices", registration.canonicalBytes), 201)
        guard let deviceId = phone["deviceId"]?.stringValue, let credential = phone["credential"]?.stringValue else {
            throw SetupFailed(status: 201, step: "register")
        }
        func app(_ path: String, _ body: JSONValue) -> HTTPRequest {
            HTTPRequest(
                url: base + "/v1/pulse/devices/\(deviceId)" + path,
                headers: [
                    HTTPHeader("content-type", "application/json"), HTTPHeader("authorization", "Bearer \(credential)"),
                ],
                body: body.canonicalBytes)
        }
        var keys: [Site] = []
        for s in 0..<sites {
            let minted = try await call(client, app("/sites", ["name": .string("bench-site-\(s)")]), 201)
            guard let sourceId = minted["sourceId"]?.stringValue, let key = minted["pushKey"]?.stringValue,
                let pushKey = try? Base64.urlDecode(key)
            else { throw SetupFailed(status: 201, step: "mint") }
            keys.append(Site(sourceId: sourceId, pushKey: pushKey))
        }
        var schedule: [Ref] = []
        for r in 0..<refs {
            for site in keys {
                let name = "ref-\(r)"
                _ = try await call(
                    client,
                    app("/sites/\(site.sourceId)/activities/\(name)", ["token": .string(RelayBench.randomHex(32))]),
                    200)
                schedule.append(Ref(site: site, name: name))
            }
        }
        return PulsePhoneClient(deviceId: deviceId, schedule: schedule)
    }

    /// Sends an app API request; its JSON answer, or ``SetupFailed`` unless the status is `expected`.
    static func call(_ client: HTTPClient, _ request: HTTPRequest, _ expected: Int) async throws -> JSONValue {
        let response = try await client.send(request)
        guard response.status == expected, let answer = try? JSONValue.parse(response.body) else {
            throw SetupFailed(status: response.status, step: request.url)
        }
        return answer
    }

    /// An app API call during setup was refused.
    struct SetupFailed: Error {
        var status: Int
        var step: String
    }

    /// The bytes of a signed `update` of `ref` at its revision: `requestId`, the time now, and the
    /// guide's v2 HMAC over the canonical string.
    func push(_ ref: Ref, requestId: String, connection: RawHTTPConnection) -> [UInt8] {
        let now = Int64(time(nil))
        let body: JSONValue = [
            "ref": .string(ref.name), "event": "update", "timestamp": .number(Double(now)),
            "contentState": [
                "title": "Claude Code", "summary": "Running the test suite", "status": "running",
                "revision": .number(Double(ref.revision)),
            ],
        ]
        let bytes = body.canonicalBytes
        let path = "/v1/devices/\(deviceId)/push"
        let digest = Hex.encode(SHA256.hash(bytes))
        let canonical = "POST\n\(path)\n\(now)\n\(requestId)\n\(digest)"
        let mac = HMACSHA256.authenticationCode(key: ref.site.pushKey, message: Array(canonical.utf8))
        let head = connection.head(
            method: "POST", path: path,
            headers: [
                ("Content-Type", "application/json"), ("X-Pulse-Source", ref.site.sourceId),
                ("X-Pulse-Auth", "v2 \(now) \(requestId) \(Base64.urlEncode(mac))"),
            ], bodyCount: bytes.count)
        return Array(head.utf8) + bytes
    }
}
