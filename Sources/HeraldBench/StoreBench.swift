import ChannelAPI
import Foundation
import Router

/// The store's hot paths on their own, in CPU time of the calling thread (so other processes on a
/// loaded machine move the figures less than wall time): persist one notification with N outbox
/// rows given, claim them, and record N results in the router's chunks of 125; then, with N devices
/// registered, persist one whose outline the store expands against them (`expand`: what `send` and
/// `POST /v1/notifications` do). Each round uses a fresh
/// store file; the line reports the fastest and the median round. With a PostgreSQL `url` the rounds
/// run on that database (new notification ids each round), and the wall time matters most there:
/// the server does the work.
enum StoreBench {
    static func run(deliveries: Int, rounds: Int, url: String? = nil) throws -> String {
        var insert: [Double] = []
        var claim: [Double] = []
        var record: [Double] = []
        var insertWall: [Double] = []
        var claimWall: [Double] = []
        var recordWall: [Double] = []
        var expand: [Double] = []
        var expandWall: [Double] = []
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        for _ in 0..<max(1, rounds) {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let sqlite = url == nil ? try SQLiteStore(path: dir.appendingPathComponent("herald.db").path) : nil
            let postgres = try url.map { try PostgresStore(url: $0) }
            defer {
                sqlite?.close()
                postgres?.close()
            }
            guard let store: any HeraldStore = sqlite ?? postgres else { continue }
            let n = HeraldNotification(title: "Build finished", body: "All tests passed")
            let rows = (0..<deliveries).map { i in
                DeliveryRecord(
                    id: "\(n.id)-\(100_000_000 + i)", notificationId: n.id, step: 0, position: i, channel: "rec",
                    deviceId: "device-\(i)", platform: "phone", state: .pending, updatedAt: now)
            }
            var t0 = threadCPU()
            var w0 = wall()
            try store.insertNotification(n, steps: [], deliveries: rows, now: now)
            insert.append(threadCPU() - t0)
            insertWall.append(wall() - w0)
            t0 = threadCPU()
            w0 = wall()
            let claimed = try store.claimPending(
                notificationId: n.id, step: 0, channel: "rec", owner: "bench", until: now.addingTimeInterval(60),
                now: now)
            claim.append(threadCPU() - t0)
            claimWall.append(wall() - w0)
            let attempts = claimed.map { d in
                AttemptRecord(
                    deliveryId: d.id, attempt: 1, state: .delivered, status: 200, providerMessageId: "p-\(d.id)")
            }
            t0 = threadCPU()
            w0 = wall()
            for start in stride(from: 0, to: attempts.count, by: 125) {
                _ = try store.record(Array(attempts[start..<min(attempts.count, start + 125)]), now: now)
            }
            record.append(threadCPU() - t0)
            recordWall.append(wall() - w0)
            // The send path's persist: N registered devices, and the store expands the planner's
            // outline against them (`insertNotification(_:steps:groups:…)`, no row built in Swift).
            _ = try store.upsertDevices(
                (0..<deliveries).map {
                    Device(deviceId: "device-\($0)", platform: "phone", fields: ["token": .string("t\($0)")])
                }, now: now)
            let fanOut = HeraldNotification(title: "Build finished", body: "All tests passed")
            let group = OutboxGroup(
                step: 0, position: 0, channel: "rec", platforms: ["phone"], state: .pending, reason: nil)
            t0 = threadCPU()
            w0 = wall()
            let expanded = try store.insertNotification(
                fanOut, steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)], groups: [group], now: now
            ) { _ in }
            expand.append(threadCPU() - t0)
            expandWall.append(wall() - w0)
            guard expanded >= deliveries else { throw BenchError("the outline expanded to \(expanded) rows") }
        }
        func figures(_ values: [Double]) -> JSONValue {
            let sorted = values.sorted()
            return .object([
                "min_ms": .number((sorted[0] * 10).rounded() / 10),
                "median_ms": .number((sorted[sorted.count / 2] * 10).rounded() / 10),
            ])
        }
        return JSONValue.object([
            "bench": "router-store", "store": .string(url == nil ? "sqlite" : "postgres"),
            "deliveries": .number(Double(deliveries)), "rounds": .number(Double(rounds)),
            "insert_cpu": figures(insert), "claim_cpu": figures(claim), "record_cpu": figures(record),
            "insert_wall": figures(insertWall), "claim_wall": figures(claimWall), "record_wall": figures(recordWall),
            "expand_cpu": figures(expand), "expand_wall": figures(expandWall),
        ]).canonicalString
    }

    /// Wall time, in milliseconds.
    static func wall() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1e6
    }

    /// CPU time of the calling thread, in milliseconds.
    static func threadCPU() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) * 1000 + Double(spec.tv_nsec) / 1e6
    }
}
