import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

@testable import Router

/// Issue 18: several `herald` worker processes on one PostgreSQL outbox, sending to a counting
/// fake FCM (the SIGKILL trials' fixture). No crash: every delivery exactly once. One worker
/// SIGKILLed mid-drain: nothing lost, a duplicate only with the same idempotency key, done within
/// lease + backoff. The database going away: `herald send` exits 1 with a clear error, nothing
/// accepted is lost, and a running worker resumes by itself.
@Suite(.serialized) struct ScaleOutTests {
    /// Deliveries of the no-crash run (20 notifications × 1,000 devices); a sanitizer run uses fewer.
    static let devices = 1_000
    static var notifications: Int { TestTiming.underSanitizer ? 2 : 20 }
    /// The lease of these runs: a killed worker's rows are taken over after it.
    static let lease = 2.0

    /// `lease` defaults to one long enough that a live worker on a loaded machine renews in time
    /// (its renewal runs every third of it): the no-crash run must send nothing twice.
    static func fixture(url: String, lease: Int = 30) async throws -> FCMFanOutFixture {
        try await FCMFanOutFixture.make(
            devices: devices, retry: "{ attempts: 20, initial: 1s, max: 1s }",
            store: "{ url: \"\(url)\", lease: \(lease)s }")
    }

    /// Puts `count` notifications to every device into the outbox as `pending` rows, as an accepting
    /// `serve` (or a `send` that died before its first attempts) leaves them. Returns the ids.
    static func enqueue(_ url: String, count: Int, prefix: String) throws -> [String] {
        let store = try PostgresStore(url: url)
        defer { store.close() }
        var ids: [String] = []
        let now = Date()
        for k in 0..<count {
            let n = HeraldNotification(id: "\(prefix)-\(k)", title: "t\(k)")
            let rows = (0..<devices).map { i in
                DeliveryRecord(
                    id: "\(prefix)-\(k)-\(i)", notificationId: n.id, step: 0, position: 0, channel: "fcm",
                    deviceId: "d\(i)", platform: "phone", state: .pending, updatedAt: now)
            }
            try store.insertNotification(
                n, steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)], deliveries: rows, now: now)
            ids += rows.map(\.id)
        }
        return ids
    }

    /// How many times the fake received each idempotency key, and the token each came with.
    static func sends(_ fixture: FCMFanOutFixture) async throws -> (count: [String: Int], token: [String: String]) {
        var count: [String: Int] = [:]
        var token: [String: String] = [:]
        for r in try await fixture.server.requests() where r.path.hasSuffix("messages:send") {
            let body = try JSONValue.parse(r.body)
            let id = body["message"]?["data"]?["heraldDeliveryId"]?.stringValue ?? "<none>"
            count[id, default: 0] += 1
            token[id] = body["message"]?["token"]?.stringValue
        }
        return (count, token)
    }

    @Test func threeWorkersDeliverEveryRowExactlyOnce() async throws {
        let url = try TestPostgres.start().createDatabase()
        let fixture = try await Self.fixture(url: url)
        defer { Task { await fixture.server.stop() } }
        try await fixture.answer([FCMFanOutFixture.ok(delay: .milliseconds(1))])
        let ids = try Self.enqueue(url, count: Self.notifications, prefix: "once")
        let workers = try (0..<3).map { _ in try fixture.spawn(["drain", "--until-empty", "--timeout", "80"]) }
        for w in workers {
            let ended = try #require(try await w.waitForExit(timeout: .seconds(90)), "a worker did not finish")
            #expect(ended.code == 0, "\(ended.stderr)")
        }
        let (count, token) = try await Self.sends(fixture)
        #expect(count.count == ids.count, "every delivery arrived")
        let doubled = count.filter { $0.value != 1 }
        #expect(doubled.isEmpty, "sent more than once: \(doubled.prefix(5))")
        #expect(Set(count.keys) == Set(ids))
        #expect(token["once-0-7"] == "tok-7")
        let store = try PostgresStore(url: url)
        defer { store.close() }
        #expect(try store.deliveryCounts() == [.delivered: ids.count])
    }

    @Test func aWorkerKilledMidDrainLosesNothing() async throws {
        let url = try TestPostgres.start().createDatabase()
        let fixture = try await Self.fixture(url: url, lease: Int(Self.lease))
        defer { Task { await fixture.server.stop() } }
        let store = try PostgresStore(url: url)
        defer { store.close() }
        // Several kill points: early, midway, late in the drain.
        for (trial, fraction) in [0.1, 0.45, 0.8].enumerated() {
            try await fixture.server.reset()
            try await fixture.answer([FCMFanOutFixture.ok(delay: .milliseconds(1))])
            let ids = try Self.enqueue(url, count: TestTiming.underSanitizer ? 1 : 3, prefix: "kill\(trial)")
            let workers = try (0..<3).map { _ in try fixture.spawn(["drain", "--until-empty", "--timeout", "60"]) }
            let target = Int(Double(ids.count) * fraction)
            let deadline = ContinuousClock.now + .seconds(30)
            while try await Self.sends(fixture).count.count < target, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let victim = try await workers[trial % 3].kill()
            for (i, w) in workers.enumerated() where i != trial % 3 {
                let ended = try #require(try await w.waitForExit(timeout: .seconds(70)), "a worker did not finish")
                #expect(ended.code == 0, "\(ended.stderr)")
            }
            let (count, token) = try await Self.sends(fixture)
            let lost = ids.filter { count[$0] == nil }
            #expect(
                lost.isEmpty, "trial \(trial): \(lost.count) deliveries lost (victim: \(victim.terminatedBySignal))")
            // A duplicate is only ever a resend of the same delivery id to the same device.
            let foreign = count.keys.filter { !$0.hasPrefix("kill\(trial)-") }
            #expect(foreign.isEmpty)
            for id in ids.prefix(50) {
                let device = id.split(separator: "-").last.map(String.init) ?? ""
                #expect(token[id] == "tok-\(device)")
            }
            // Resent rows (the victim's sent-but-unrecorded chunks, and under load a survivor's lease
            // that ran out) carry their own id, so the provider drops the second copy.
            #expect(count.values.allSatisfy { $0 >= 1 })
            let counts = try store.deliveryCounts()
            #expect(counts[.pending] == nil && counts[.retry] == nil, "trial \(trial): \(counts)")
        }
    }

    @Test func theDatabaseGoingAwayLosesNothingAndWorkersResume() async throws {
        let server = try TestPostgres.startSeparate()
        defer { Task { await server.shutDown() } }
        let url = try server.createDatabase()
        let fixture = try await FCMFanOutFixture.make(
            devices: 20, retry: "{ attempts: 50, initial: 1s, max: 1s }", store: "{ url: \"\(url)\", lease: 2s }")
        defer { Task { await fixture.server.stop() } }
        // Accepted before the outage: queued as retries (the provider is busy).
        try await fixture.answer([
            FakeHTTPResponse(status: 503, headers: ["retry-after": "1"], body: Array("busy".utf8))
        ])
        let accepted = try fixture.cli.run(["send", "--json", #"{"id":"before","title":"t"}"#])
        #expect(accepted.code == 0, "\(accepted.stderr)")
        let worker = try fixture.spawn(["run"])
        defer { Task { _ = try? await worker.kill() } }
        _ = try await worker.waitForStderr("herald: running", timeout: .seconds(30))
        try await server.stop()
        let refused = try fixture.cli.run(["send", "--json", #"{"id":"during","title":"t"}"#])
        #expect(refused.code == 1)
        #expect(refused.stderr.contains("unreachable"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("password"))
        try await Task.sleep(for: .seconds(2))
        #expect(worker.isRunning, "the worker outlives the outage: \(worker.stderr.suffix(500))")
        try server.restart()
        try await fixture.answer([FCMFanOutFixture.ok(delay: .milliseconds(1))])
        // New work after the restart is picked up by the same worker, with nothing restarted.
        let later = try Self.enqueueSmall(url, id: "after")
        let deadline = ContinuousClock.now + .seconds(30)
        var delivered: [DeliveryState: Int] = [:]
        while ContinuousClock.now < deadline {
            let store = try PostgresStore(url: url)
            delivered = try store.deliveryCounts()
            store.close()
            if delivered == [.delivered: 20 + later] { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(delivered == [.delivered: 20 + later], "worker log: \(worker.stderr.suffix(800))")
        let (count, _) = try await Self.sends(fixture)
        #expect(count.keys.filter { $0.hasPrefix("after-") }.count == later)
        _ = try await worker.kill()
        await server.shutDown()
    }

    static func enqueueSmall(_ url: String, id: String) throws -> Int {
        let store = try PostgresStore(url: url)
        defer { store.close() }
        let now = Date()
        let n = HeraldNotification(id: id, title: "t")
        let rows = (0..<20).map { i in
            DeliveryRecord(
                id: "\(id)-\(i)", notificationId: id, step: 0, position: 0, channel: "fcm", deviceId: "d\(i)",
                platform: "phone", state: .pending, updatedAt: now)
        }
        try store.insertNotification(
            n, steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)], deliveries: rows, now: now)
        return rows.count
    }
}
