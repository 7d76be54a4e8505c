import ChannelAPI
import Foundation
import HeraldChannels
import HeraldSQLite
import Router
import RouterTesting

/// Router benchmarks: plan + persist one notification for N devices, and drain N due retries,
/// both through a recording channel (so the router, not a provider, is measured).
enum RouterBench {
    static func makeRouter(devices: Int, recorder: RecordingChannel, clock: ManualClock) async throws -> (
        Router, String
    ) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let registry = try ChannelRegistry([recorder.factory(type: "rec", platforms: ["phone"])])
        let yaml = """
            version: 1
            store: { path: \(dir.path)/herald.db }
            channels:
              rec: { type: rec, retry: { attempts: 5, initial: 1s, max: 1s } }
            routes:
              default:
                - deliver: [rec]
            """
        let config = try ConfigLoader.parse(yaml, registry: registry)
        let router = try await Router(config: config, registry: registry, options: RouterOptions(clock: clock))
        let now = clock.now()
        for i in 0..<devices {
            _ = try router.store.upsertDevice(
                Device(deviceId: "device-\(i)", platform: "phone", fields: ["token": .string("token-\(i)")]), now: now)
        }
        return (router, dir.path)
    }

    /// Plan + persist (the channel answers instantly), timed around `send`; returns a JSON line.
    static func fanout(devices: Int) async throws -> String {
        let recorder = RecordingChannel()
        let clock = ManualClock()
        let (router, dir) = try await makeRouter(devices: devices, recorder: recorder, clock: clock)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Warm-up on a small namespace-less send so lazy initialisation is not measured.
        _ = try await router.send(HeraldNotification(namespace: "warmup", title: "warm"))
        let n = HeraldNotification(title: "Build finished", body: "All tests passed", data: ["sessionId": "s1"])
        let t0 = ContinuousClock.now
        let plan = try router.enqueue(n)
        let tPlan = ContinuousClock.now
        let rssAfterPersist = HTTPBench.peakRSSKilobytes()
        let summary = try await router.drain()
        let t1 = ContinuousClock.now
        let report = try router.history(id: n.id)[0]
        await router.shutdown()
        let delivered = report.deliveries.filter { $0.state == .delivered }.count
        _ = summary
        return JSONValue.object([
            "bench": "router-fanout", "devices": .number(Double(devices)), "delivered": .number(Double(delivered)),
            "plan_and_persist_ms": .number(ms(tPlan - t0)), "first_attempts_ms": .number(ms(t1 - tPlan)),
            "planned": .number(Double(plan.deliveryCount)),
            "peak_rss_kb_after_persist": .number(Double(rssAfterPersist)),
            "peak_rss_kb": .number(Double(HTTPBench.peakRSSKilobytes())),
        ]).canonicalString
    }

    /// Persist one notification for N devices whose first attempt fails transiently, then drain
    /// the N due retries; reports deliveries/s of the drain.
    static func drain(devices: Int) async throws -> String {
        let recorder = RecordingChannel()
        let clock = ManualClock()
        let (router, dir) = try await makeRouter(devices: devices, recorder: recorder, clock: clock)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        recorder.answer { t, _ in .retry(t, status: 503, reason: "UNAVAILABLE") }
        let t0 = ContinuousClock.now
        let report = try await router.send(HeraldNotification(title: "t"))
        let tPersist = ContinuousClock.now
        recorder.answer { t, _ in .delivered(t, status: 200) }
        clock.advance(by: .seconds(5))
        let summary = try await router.drain(untilEmpty: true, timeout: .seconds(600))
        let t1 = ContinuousClock.now
        await router.shutdown()
        let seconds = Double((t1 - tPersist).components.attoseconds) / 1e18 + Double((t1 - tPersist).components.seconds)
        return JSONValue.object([
            "bench": "router-drain", "devices": .number(Double(devices)),
            "first_pass_ms": .number(ms(tPersist - t0)), "queued": .number(Double(report.deliveries(.retry).count)),
            "drained": .number(Double(summary.attempted)), "remaining": .number(Double(summary.remaining)),
            "drain_ms": .number(ms(t1 - tPersist)),
            "deliveries_per_s": .number((Double(summary.attempted) / seconds).rounded()),
            "peak_rss_kb": .number(Double(HTTPBench.peakRSSKilobytes())),
        ]).canonicalString
    }

    /// Plan + persist of one notification for N devices, `rounds` times on the same router (a new
    /// notification each round), as `herald send` and `POST /v1/notifications` run it
    /// (``Router/enqueue(batch:)``: device counts, outline, the store expands the outline in one
    /// transaction); and, beside it, ``Router/enqueue(_:)``, which also builds and returns the full
    /// plan (every device read). Returns a JSON line with the medians and every round, in milliseconds.
    static func persist(devices: Int, rounds: Int) async throws -> String {
        let recorder = RecordingChannel()
        let clock = ManualClock()
        let (router, dir) = try await makeRouter(devices: devices, recorder: recorder, clock: clock)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Warm-up: fills the device cache and SQLite's page cache as a long-running router has them.
        _ = try router.enqueue(HeraldNotification(title: "warm"))
        _ = router.enqueue(batch: [HeraldNotification(title: "warm")])
        var times: [Double] = []
        var cpu: [Double] = []
        var planTimes: [Double] = []
        for _ in 0..<max(1, rounds) {
            let n = HeraldNotification(title: "Build finished", body: "All tests passed", data: ["sessionId": "s1"])
            let t0 = ContinuousClock.now
            let c0 = StoreBench.threadCPU()
            let stored = router.enqueue(batch: [n])
            cpu.append(((StoreBench.threadCPU() - c0) * 10).rounded() / 10)
            times.append(ms(ContinuousClock.now - t0))
            guard case .success(let rows) = stored.first, rows == devices else {
                throw BenchError("enqueue(batch:) stored \(stored) rows, not \(devices)")
            }
            let p0 = ContinuousClock.now
            _ = try router.enqueue(HeraldNotification(title: "Build finished", body: "All tests passed"))
            planTimes.append(ms(ContinuousClock.now - p0))
        }
        await router.shutdown()
        func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
        return JSONValue.object([
            "bench": "router-persist", "devices": .number(Double(devices)),
            "median_ms": .number(median(times)), "runs_ms": .array(times.map { .number($0) }),
            "cpu_median_ms": .number(median(cpu)),
            "with_plan_median_ms": .number(median(planTimes)),
            "peak_rss_kb": .number(Double(HTTPBench.peakRSSKilobytes())),
        ]).canonicalString
    }

    /// The router's in-process send under the config at `configPath` (its store holds the devices,
    /// registered beforehand): one notification through ``Router/sendSummarized(_:)`` (what `herald send`
    /// runs; ``Router/send(_:)`` also builds the full report), timed around the call alone (config load,
    /// channel set-up and store open are not timed; the first request's connection and provider token
    /// are). Returns a JSON line: `devices` (deliveries), `delivered`, `seconds`, `rps`, `peak_rss_kb`, and
    /// where the memory is: `sqlite_highwater_kb` (SQLite's own allocations at their peak: page cache,
    /// statements, in this process's heap) and, from `/proc/self/status` right after the send,
    /// `rss_anon_kb` (heap, stacks: what the process allocated) and `rss_file_kb` (mapped libraries).
    static func send(configPath: String) async throws -> String {
        let router = try await Router(configPath: configPath, registry: HeraldChannels.registry)
        let n = HeraldNotification(
            type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            url: "/sessions/5f0c", data: ["sessionId": "5f0c", "sessionName": "claude - hapi", "requestId": "r-17"],
            badge: 3, ttl: 3600)
        let t0 = ContinuousClock.now
        let summary = try await router.sendSummarized(n)
        let elapsed = ContinuousClock.now - t0
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func kb(_ key: String) -> Double {
            for line in status.split(separator: "\n") where line.hasPrefix(key) {
                return Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            }
            return 0
        }
        let (anon, file) = (kb("RssAnon:"), kb("RssFile:"))
        await router.shutdown()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return JSONValue.object([
            "bench": "router-send", "devices": .number(Double(summary.total)),
            "delivered": .number(Double(summary.counts[.delivered] ?? 0)),
            "seconds": .number((seconds * 1000).rounded() / 1000),
            "rps": .number(seconds > 0 ? (Double(summary.total) / seconds).rounded() : 0),
            "peak_rss_kb": .number(Double(HTTPBench.peakRSSKilobytes())),
            "sqlite_highwater_kb": .number(Double(SQLiteDatabase.memoryHighwater / 1024)),
            "rss_anon_kb": .number(anon), "rss_file_kb": .number(file),
        ]).canonicalString
    }

    static func ms(_ d: Duration) -> Double {
        let (s, a) = d.components
        return ((Double(s) * 1000 + Double(a) / 1e15) * 10).rounded() / 10
    }
}
