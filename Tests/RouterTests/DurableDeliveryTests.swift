import ChannelAPI
import ChannelSupport
import Foundation
import Router
import RouterTesting
import Testing

/// Outbox, retries, dead tokens, lifecycle, badge, cooldown, reload. The tests that exercise the
/// store run against SQLite and PostgreSQL (`StoreKind`).
@Suite struct DurableDeliveryTests {
    static let routes = "routes:\n  default:\n    - deliver: [fcm]\n"

    @Test func backoffWithInjectedClock() {
        let p = RetryPolicy(maxAttempts: 5, initialDelay: .seconds(2), maxDelay: .seconds(10))
        let t0 = Date(timeIntervalSince1970: 1000)
        #expect(
            p.decide(attempt: 1, now: t0, retryAfter: nil, expiresAt: nil, jitter: 1)
                == .retry(at: t0.addingTimeInterval(2)))
        #expect(
            p.decide(attempt: 2, now: t0, retryAfter: nil, expiresAt: nil, jitter: 1)
                == .retry(at: t0.addingTimeInterval(4)))
        #expect(
            p.decide(attempt: 3, now: t0, retryAfter: nil, expiresAt: nil, jitter: 0)
                == .retry(at: t0.addingTimeInterval(4)))
        #expect(
            p.decide(attempt: 4, now: t0, retryAfter: nil, expiresAt: nil, jitter: 1)
                == .retry(at: t0.addingTimeInterval(10)))
        #expect(
            p.decide(attempt: 5, now: t0, retryAfter: nil, expiresAt: nil, jitter: 1)
                == .giveUp("gave up after 5 attempts"))
        // Retry-After wins over backoff, even beyond max.
        #expect(
            p.decide(attempt: 1, now: t0, retryAfter: .seconds(120), expiresAt: nil, jitter: 1)
                == .retry(at: t0.addingTimeInterval(120)))
        // Never past the TTL.
        #expect(
            p.decide(attempt: 1, now: t0, retryAfter: .seconds(120), expiresAt: t0.addingTimeInterval(60), jitter: 1)
                == .giveUp("ttl expired before the next attempt"))
    }

    @Test func retryAfterParsing() {
        let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.parse("soon", now: now) == nil)
    }

    @Test(arguments: StoreKind.allCases) func transientFailureIsQueuedThenDrained(store: StoreKind) async throws {
        let channels = Harness.channelsYAML.replacingOccurrences(
            of: "fcm: { type: rec-fcm }", with: "fcm: { type: rec-fcm, retry: { attempts: 3, initial: 10s, max: 1m } }")
        let h = try await Harness.make(routes: Self.routes, channels: channels, store: store)
        try await h.register("phone", "pixel")
        h.fcm.answer { t, _ in .retry(t, status: 503, reason: "UNAVAILABLE", retryAfter: .seconds(30)) }
        let report = try await h.router.send(HeraldNotification(title: "t"))
        let d = try #require(report.deliveries.first)
        #expect(d.state == .retry)
        #expect(d.nextAttemptAt == h.clock.now().addingTimeInterval(30))
        // Not due yet: nothing is attempted.
        #expect(try await h.router.drain().attempted == 0)
        h.clock.advance(by: .seconds(31))
        h.fcm.answer { t, _ in .delivered(t, status: 200) }
        let summary = try await h.router.drain()
        #expect(summary.attempted == 1)
        #expect(summary.remaining == 0)
        let after = try h.router.history(id: report.id)[0].deliveries[0]
        #expect(after.state == .delivered)
        #expect(after.attempts == 2)
        // The same delivery id (idempotency key) was used for both attempts.
        #expect(Set(h.fcm.targets.map(\.deliveryId)).count == 1)
        #expect(h.fcm.targets.map(\.attempt) == [1, 2])
    }

    @Test(arguments: StoreKind.allCases) func givesUpAtAttemptLimitWithLastReason(store: StoreKind) async throws {
        let channels = Harness.channelsYAML.replacingOccurrences(
            of: "fcm: { type: rec-fcm }", with: "fcm: { type: rec-fcm, retry: { attempts: 2, initial: 1s, max: 1s } }")
        let h = try await Harness.make(routes: Self.routes, channels: channels, store: store)
        try await h.register("phone", "pixel")
        h.fcm.answer { t, _ in .retry(t, status: 500, reason: "INTERNAL") }
        let report = try await h.router.send(HeraldNotification(title: "t"))
        let summary = try await h.router.drain(untilEmpty: true, timeout: .seconds(60))
        #expect(summary.remaining == 0)
        let d = try h.router.history(id: report.id)[0].deliveries[0]
        #expect(d.state == .failed)
        #expect(d.reason == "gave up after 2 attempts: INTERNAL")
    }

    @Test(arguments: StoreKind.allCases) func deadRemovesDeviceTransientKeepsIt(store: StoreKind) async throws {
        let h = try await Harness.make(routes: Self.routes, store: store)
        try await h.register("phone", "alive")
        try await h.register("phone", "gone")
        h.fcm.answer { t, _ in
            t.device?.deviceId == "gone"
                ? .dead(t, status: 404, reason: "UNREGISTERED") : .retry(t, status: 503, reason: "UNAVAILABLE")
        }
        let events = h.router.events()
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("fcm", "gone") == .dead)
        #expect(report.outcome("fcm", "alive") == .retry)
        #expect(try h.router.devices().map(\.deviceId) == ["alive"])
        var removed: [String] = []
        for await e in events {
            if case .deviceRemoved(let d, let channel, let reason) = e {
                removed.append("\(channel):\(d.deviceId):\(reason)")
                break
            }
        }
        #expect(removed == ["fcm:gone:UNREGISTERED"])
    }

    @Test(arguments: StoreKind.allCases) func deadDoesNotRemoveReRegisteredToken(store: StoreKind) async throws {
        let h = try await Harness.make(routes: Self.routes, store: store)
        try await h.register("phone", "p", token: "old")
        let router = h.router
        // Weak: the fake channel belongs to the router's graph, so a strong capture is a retain cycle
        // (LeakSanitizer reported the whole router, its store and SQLite's memory).
        h.fcm.answer { [weak router] t, _ in
            // The device re-registers with a new token while the old one is being judged dead.
            _ = try? router?.store.upsertDevice(
                Device(deviceId: "p", platform: "phone", fields: ["token": "new"]), now: Date())
            return .dead(t, status: 404, reason: "UNREGISTERED")
        }
        _ = try await h.router.send(HeraldNotification(title: "t"))
        #expect(try h.router.devices().map(\.token) == ["new"])
    }

    @Test(arguments: StoreKind.allCases) func waitForActionAnsweredTimedOutAndEarly(store: StoreKind) async throws {
        let h = try await Harness.make(routes: Self.routes, store: store)
        let n = try await h.router.send(HeraldNotification(type: "permission-request", title: "Allow?"))
        // Timed out.
        #expect(try await h.router.waitForAction(notificationID: n.id, timeout: .milliseconds(50)) == nil)
        // Answered while waiting.
        let router = h.router
        let waiter = Task { try await router.waitForAction(notificationID: n.id, timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        try h.router.recordEvent(ChannelEvent(notificationId: n.id, kind: .tapped))
        try h.router.recordEvent(
            ChannelEvent(
                notificationId: n.id, kind: .action, actionId: "approve", actionData: ["by": "me"], deviceId: "pixel"))
        let answered = try #require(try await waiter.value)
        #expect(answered.actionId == "approve")
        #expect(answered.actionData == ["by": "me"])
        // Answered before waiting began.
        let early = try #require(try await h.router.waitForAction(notificationID: n.id, timeout: .milliseconds(10)))
        #expect(early.actionId == "approve")
        let history = try h.router.history(id: n.id)[0]
        #expect(history.events.map(\.kind) == [.tapped, .action])
        // Unknown notification.
        await #expect(throws: StoreError.self) {
            try await h.router.waitForAction(notificationID: "nope", timeout: .milliseconds(1))
        }
        #expect(throws: StoreError.self) {
            try h.router.recordEvent(ChannelEvent(notificationId: "nope", kind: .action, actionId: "x"))
        }
    }

    @Test(arguments: StoreKind.allCases) func badgeCountsDistinctTagsAndSurvivesRestart(store: StoreKind) async throws {
        let channels = Harness.channelsYAML.replacingOccurrences(
            of: "fcm: { type: rec-fcm }", with: "fcm: { type: rec-fcm, badge: pending-tags }")
        let h = try await Harness.make(routes: Self.routes, channels: channels, store: store)
        try await h.register("phone", "pixel")
        _ = try await h.router.send(HeraldNotification(title: "a", tag: "t1"))
        _ = try await h.router.send(HeraldNotification(title: "b", tag: "t2"))
        _ = try await h.router.send(HeraldNotification(title: "c", tag: "t1"))
        #expect(h.fcm.requests.map(\.pendingBadge) == [1, 2, 2])
        #expect(h.fcm.requests.last?.effectiveBadge == 2)
        await h.router.shutdown()
        // A new router on the same store sees the same count.
        let again = try await Harness.make(routes: Self.routes, channels: channels, storePath: h.storePath)
        #expect(try again.router.pendingBadge(namespace: "default") == 2)
        try again.router.engaged(namespace: "default")
        _ = try await again.router.send(HeraldNotification(title: "d", tag: "t3", badge: nil))
        #expect(again.fcm.requests.last?.pendingBadge == 1)
        _ = try await again.router.send(HeraldNotification(title: "e", tag: "t4", badge: 9))
        #expect(again.fcm.requests.last?.effectiveBadge == 9)
    }

    @Test(arguments: StoreKind.allCases) func cooldownDropsRepeatOfSameTag(store: StoreKind) async throws {
        let h = try await Harness.make(
            routes: "routes:\n  default:\n    - deliver: [fcm]\n      cooldown: 5s\n", store: store)
        try await h.register("phone", "pixel")
        let first = try await h.router.send(HeraldNotification(type: "ready", title: "a", data: ["sessionId": "s1"]))
        #expect(first.outcome("fcm") == .delivered)
        h.clock.advance(by: .seconds(2))
        let repeatSoon = try await h.router.send(
            HeraldNotification(type: "ready", title: "b", data: ["sessionId": "s1"]))
        #expect(repeatSoon.outcome("fcm") == .suppressed)
        #expect(repeatSoon.deliveries[0].reason?.hasPrefix("cooldown") == true)
        let otherSession = try await h.router.send(
            HeraldNotification(type: "ready", title: "c", data: ["sessionId": "s2"]))
        #expect(otherSession.outcome("fcm") == .delivered)
        h.clock.advance(by: .seconds(4))
        let later = try await h.router.send(HeraldNotification(type: "ready", title: "d", data: ["sessionId": "s1"]))
        #expect(later.outcome("fcm") == .delivered)
    }

    @Test func channelTimeoutBecomesRetry() async throws {
        let channels = Harness.channelsYAML.replacingOccurrences(
            of: "fcm: { type: rec-fcm }", with: "fcm: { type: rec-fcm, timeout: 100ms }")
        let h = try await Harness.make(routes: Self.routes, channels: channels)
        try await h.register("phone", "pixel")
        h.fcm.delay(.seconds(30))
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("fcm") == .retry)
        // A call that ignores the per-request budget is cut off at its outer bound (here 100 ms and
        // the 1 s least margin).
        #expect(report.deliveries[0].reason == "timed out after 1100ms")
    }

    @Test func reloadWithBrokenFileKeepsOldGraph() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-reload-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let file = dir.appendingPathComponent("herald.yaml").path
        let recorder = RecordingChannel()
        let registry = try ChannelRegistry([recorder.factory(type: "rec", platforms: ["phone"])])
        let good =
            "version: 1\nstore: { path: \(dir.path)/h.db }\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n"
        try good.write(toFile: file, atomically: true, encoding: .utf8)
        let router = try await Router(
            configPath: file, registry: registry, options: RouterOptions(logSink: RecordingLogSink()))
        try await router.register(Device(deviceId: "p", platform: "phone", fields: ["token": "x"]))
        try "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [b]\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        do {
            try await router.reload()
            Issue.record("reload should fail")
        } catch let e as ConfigError {
            #expect(e.description == "\(file):6:17: unknown channel 'b' (defined: a)")
        }
        #expect(try await router.send(HeraldNotification(title: "still routed")).outcome("a") == .delivered)
        // A good file is picked up.
        try good.replacingOccurrences(of: "a: { type: rec }", with: "a: { type: rec, enabled: false }").write(
            toFile: file, atomically: true, encoding: .utf8)
        try await router.reload()
        #expect(try await router.send(HeraldNotification(title: "disabled now")).deliveries.isEmpty)
        await router.shutdown()
    }

    @Test(arguments: StoreKind.allCases) func pendingDeliveriesSurviveARestart(store: StoreKind) async throws {
        // Simulate a crash after persisting: insert the notification and its outbox rows through
        // the store, then let a fresh router drain them.
        let h = try await Harness.make(routes: Self.routes, store: store)
        try await h.register("phone", "p1")
        try await h.register("phone", "p2")
        let n = HeraldNotification(title: "t")
        let plan = try h.router.explain(n)
        let now = h.clock.now()
        let rows = plan.steps[0].channels[0].devices.map { d in
            DeliveryRecord(
                id: UUID().uuidString, notificationId: n.id, step: 0, position: 0, channel: "fcm", deviceId: d.deviceId,
                platform: d.platform, state: .pending, updatedAt: now)
        }
        try h.router.store.insertNotification(
            n, steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)], deliveries: rows, now: now)
        #expect(h.fcm.requests.isEmpty)
        let summary = try await h.router.drain(untilEmpty: true, timeout: .seconds(10))
        #expect(summary.attempted == 2)
        #expect(summary.remaining == 0)
        #expect(Set(h.fcm.targets.map(\.deliveryId)) == Set(rows.map(\.id)))
    }

    @Test(arguments: StoreKind.allCases) func historyRetentionPurges(store: StoreKind) async throws {
        let h = try await Harness.make(routes: Self.routes, store: store)
        try await h.register("phone", "p")
        let n = try await h.router.send(HeraldNotification(title: "old"))
        h.clock.advance(by: .seconds(86_400 * 2))
        #expect(try h.router.store.purge(before: h.clock.now().addingTimeInterval(-86_400)) == 1)
        #expect(try h.router.history(id: n.id).isEmpty)
    }
}

/// A provider's delay reaches the retry decision clamped to one day (issue 15 item 1).
@Suite struct RetryDelayClampTests {
    @Test func hugeRetryAfterIsCutToOneDay() {
        let p = RetryPolicy(maxAttempts: 5, initialDelay: .seconds(2), maxDelay: .seconds(10))
        let t0 = Date(timeIntervalSince1970: 1000)
        for huge in [Duration.seconds(99_999_999_999_999_999), .seconds(Int64.max), .seconds(86_401)] {
            #expect(
                p.decide(attempt: 1, now: t0, retryAfter: huge, expiresAt: nil, jitter: 1)
                    == .retry(at: t0.addingTimeInterval(86_400)))
        }
    }
}
