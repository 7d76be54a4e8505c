import ChannelAPI
import Foundation
import HeraldChannels
import HeraldHTTP
import HeraldHTTPTesting
import NtfyChannel
import RouterTesting
import Testing

@testable import Router

/// Issue 15 items 5 and 7: a channel's `timeout` is per request, and due work of different
/// receivers proceeds independently. Real loopback servers, real channels.
@Suite(.serialized, .stopsFakeHTTPServers) struct ExecutorTimeoutTests {
    /// A router over the ntfy plugin and the built-in channels, trusting `server`'s CA.
    static func router(
        _ yaml: String, server: FakeHTTPServer, clock: any HeraldClock = SystemClock(), passBudget: Duration? = nil
    ) async throws -> Router {
        var registry = HeraldChannels.registry
        registry.register(NtfyChannel.factory)
        let config = try ConfigLoader.parse(
            "version: 1\nstore: { path: \(Harness.tempPath()) }\n" + yaml, registry: registry)
        var options = RouterOptions(
            clock: clock, random: FixedRandom(), logSink: RecordingLogSink(),
            http: HTTPClientConfiguration(caFile: server.caFile))
        if let passBudget { options.passBudget = passBudget }
        return try await Router(config: config, registry: registry, options: options)
    }

    /// A receiver that answers every request after 300 ms, 125 targets in one chunk, a 1 s channel
    /// timeout: the call as a whole takes longer than 1 s (the channel keeps 32 requests in flight,
    /// so four rounds), but no request does. Every target is delivered once; nothing is retried or resent.
    @Test func slowButWorkingReceiverIsDeliveredOnce() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route(
            "/",
            [
                FakeHTTPResponse(
                    status: 200, headers: ["content-type": "application/json"], body: Array(#"{"id":"x"}"#.utf8),
                    delay: .milliseconds(300))
            ])
        let router = try await Self.router(
            """
            channels:
              ntfy: { type: ntfy, server: "\(server.baseURL)/", timeout: 1s }
            routes:
              default:
                - deliver: [ntfy]
            """, server: server)
        let count = 125
        for i in 0..<count {
            try await router.register(Device(deviceId: "d\(i)", platform: "ntfy", fields: ["topic": .string("t\(i)")]))
        }
        let started = ContinuousClock.now
        let report = try await router.send(HeraldNotification(title: "slow but fine"))
        let elapsed = ContinuousClock.now - started
        #expect(elapsed > .seconds(1), "the whole call outlasts one request's timeout (\(elapsed))")
        #expect(report.deliveries.count == count)
        let notDelivered = report.deliveries.filter { $0.state != .delivered }
        #expect(notDelivered.isEmpty, "\(notDelivered.prefix(3).map { "\($0.state) \($0.reason ?? "")" })")
        var perTopic: [String: Int] = [:]
        for r in try await server.requests() {
            let topic = try #require(try JSONValue.parse(r.body)["topic"]?.stringValue)
            perTopic[topic, default: 0] += 1
        }
        #expect(perTopic.count == count)
        #expect(perTopic.values.allSatisfy { $0 == 1 }, "each receiver got exactly one request")
        // Nothing is left for a retry pass to send again.
        let drained = try await router.drain()
        #expect(drained.attempted == 0)
        #expect(try await server.requests().count == count)
        await router.shutdown()
    }

    /// A receiver that never answers still times out, each request on its own after the channel's
    /// timeout (the HTTP client's timeout, not the call's outer bound), and becomes `retry`.
    @Test func hangingRequestTimesOutOnItsOwn() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/", [FakeHTTPResponse(status: 200, headers: [:], body: [], delay: .seconds(120))])
        // 2 s, stretched under a sanitizer: the call's bound is this plus as much again (at least
        // 1 s, at most 5 s), and a loaded, instrumented HTTP loop must report the request's own
        // timeout first. With 300 ms the margin was 1 s, which a fully loaded 2-core CI machine
        // overran twice in one session (the outer bound's "timed out after 1300ms" came first).
        let timeoutMs = Int((2_000 * TestTiming.scale).rounded())
        let router = try await Self.router(
            """
            channels:
              ntfy: { type: ntfy, server: "\(server.baseURL)/", timeout: \(timeoutMs)ms }
            routes:
              default:
                - deliver: [ntfy]
            """, server: server)
        try await router.register(Device(deviceId: "d", platform: "ntfy", fields: ["topic": "hang"]))
        let started = ContinuousClock.now
        let report = try await router.send(HeraldNotification(title: "nobody answers"))
        let elapsed = ContinuousClock.now - started
        // Far below the 30 s a hung call waited before; loose enough for a loaded 2-core machine.
        #expect(elapsed < TestTiming.bound(.seconds(8)), "\(elapsed)")
        let delivery = try #require(report.deliveries.first)
        #expect(delivery.state == .retry)
        #expect(delivery.reason?.contains("timeout") == true, "\(delivery.reason ?? "")")
        await router.shutdown()
    }

    /// Two webhook channels on one HTTP/1.1 host and port; one path hangs. Four notifications each
    /// have a due retry for both. The healthy channel's retries all complete within its budget while
    /// the hanging ones wait out their timeouts: a hanging receiver delays only its own work.
    @Test func hangingReceiverDoesNotHoldUpAnotherChannelsRetries() async throws {
        let server = try await FakeHTTPServer.start(http2: false)
        let notifications = 4
        let unavailable = FakeHTTPResponse(status: 503, headers: [:], body: [])
        try await server.route(
            "/hang",
            Array(repeating: unavailable, count: notifications)
                + [FakeHTTPResponse(status: 200, headers: [:], body: [], delay: .seconds(30))])
        try await server.route(
            "/ok",
            Array(repeating: unavailable, count: notifications) + [
                FakeHTTPResponse(status: 200, headers: [:], body: [])
            ])
        let secret = "whsec_" + Data(repeating: 7, count: 24).base64EncodedString()
        let clock = ManualClock()
        let router = try await Self.router(
            """
            channels:
              hang: { type: webhook, url: "\(server.baseURL)/hang", secret: "\(secret)", timeout: 3s }
              ok: { type: webhook, url: "\(server.baseURL)/ok", secret: "\(secret)", timeout: 3s }
            routes:
              default:
                - deliver: [hang, ok]
            """, server: server, clock: clock)
        for i in 0..<notifications {
            let report = try await router.send(HeraldNotification(id: "n\(i)", title: "n\(i)"))
            #expect(report.outcome("hang") == .retry)
            #expect(report.outcome("ok") == .retry)
        }
        clock.advance(by: .seconds(3600))

        let started = ContinuousClock.now
        let drain = Task { try await router.drain() }
        var okSeen = 0
        while ContinuousClock.now - started < TestTiming.bound(.seconds(10)) {
            okSeen = try await server.requests().filter { $0.path == "/ok" }.count - notifications
            if okSeen >= notifications { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let healthyDone = ContinuousClock.now - started
        #expect(okSeen == notifications)
        #expect(healthyDone < TestTiming.bound(.milliseconds(2_500)), "the healthy channel waited \(healthyDone)")
        _ = try await drain.value
        for i in 0..<notifications {
            let history = try #require(try router.history(id: "n\(i)").first)
            #expect(history.deliveries.first { $0.channel == "ok" }?.state == .delivered)
            #expect(history.deliveries.first { $0.channel == "hang" }?.state == .retry)
        }
        await router.shutdown()
    }

    /// The first attempts `drain` completes (enqueued or left by a crash) also run side by side: a
    /// hanging channel of one notification does not delay the next notification's healthy channel.
    @Test func hangingReceiverDoesNotHoldUpLaterNotifications() async throws {
        let server = try await FakeHTTPServer.start(http2: false)
        try await server.route("/hang", [FakeHTTPResponse(status: 200, headers: [:], body: [], delay: .seconds(30))])
        try await server.route("/ok", [FakeHTTPResponse(status: 200, headers: [:], body: [])])
        let secret = "whsec_" + Data(repeating: 7, count: 24).base64EncodedString()
        let router = try await Self.router(
            """
            channels:
              hang: { type: webhook, url: "\(server.baseURL)/hang", secret: "\(secret)", timeout: 3s }
              ok: { type: webhook, url: "\(server.baseURL)/ok", secret: "\(secret)", timeout: 3s }
            routes:
              default:
                - deliver: [hang, ok]
            """, server: server)
        let notifications = 4
        for i in 0..<notifications { try router.enqueue(HeraldNotification(id: "q\(i)", title: "q\(i)")) }
        let started = ContinuousClock.now
        let drain = Task { try await router.drain() }
        var okSeen = 0
        while ContinuousClock.now - started < TestTiming.bound(.seconds(10)) {
            okSeen = try await server.requests().filter { $0.path == "/ok" }.count
            if okSeen >= notifications { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let healthyDone = ContinuousClock.now - started
        #expect(okSeen == notifications)
        #expect(healthyDone < TestTiming.bound(.milliseconds(2_500)), "the healthy channel waited \(healthyDone)")
        _ = try await drain.value
        await router.shutdown()
    }

    /// A hanging channel with a backlog of due retries does not hold a worker pass, and with it the
    /// retries of another channel that come due meanwhile: a pass starts no new group after its
    /// budget, and the next pass takes the newly due work.
    @Test func newlyDueWorkIsNotHeldBehindAHangingBacklog() async throws {
        let server = try await FakeHTTPServer.start(http2: false)
        let backlog = 8
        let unavailable = FakeHTTPResponse(status: 503, headers: [:], body: [])
        try await server.route(
            "/hang",
            Array(repeating: unavailable, count: backlog)
                + [FakeHTTPResponse(status: 200, headers: [:], body: [], delay: .seconds(30))])
        try await server.route("/ok", [unavailable, FakeHTTPResponse(status: 200, headers: [:], body: [])])
        let secret = "whsec_" + Data(repeating: 7, count: 24).base64EncodedString()
        let clock = ManualClock()
        let router = try await Self.router(
            """
            channels:
              hang: { type: webhook, url: "\(server.baseURL)/hang", secret: "\(secret)", timeout: 2s, retry: { initial: 1s, max: 1s } }
              ok: { type: webhook, url: "\(server.baseURL)/ok", secret: "\(secret)", retry: { initial: 1h, max: 1h } }
            routes:
              default:
                - deliver: [ok]
              namespaces:
                slow:
                  - deliver: [hang]
            """, server: server, clock: clock, passBudget: .milliseconds(500))
        for i in 0..<backlog {
            let report = try await router.send(HeraldNotification(namespace: "slow", title: "s\(i)"))
            #expect(report.outcome("hang") == .retry)
        }
        let healthy = try await router.send(HeraldNotification(title: "healthy"))
        #expect(healthy.outcome("ok") == .retry)
        clock.advance(by: .seconds(10))  // the backlog is due, the healthy retry is not yet

        let drain = Task { try await router.drain() }
        try await Task.sleep(for: .milliseconds(300))
        clock.advance(by: .seconds(7_200))  // now it is
        let dueAt = ContinuousClock.now
        var okRequests = 0
        while ContinuousClock.now - dueAt < TestTiming.bound(.seconds(12)) {
            okRequests = try await server.requests().filter { $0.path == "/ok" }.count
            if okRequests >= 2 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let waited = ContinuousClock.now - dueAt
        #expect(okRequests == 2)
        // One pass of the backlog takes 4 rounds of 2 s; a pass within budget ends after one round.
        #expect(
            waited < TestTiming.bound(.milliseconds(4_500)), "the healthy retry waited \(waited) behind the backlog")
        drain.cancel()
        _ = try? await drain.value
        let history = try #require(try router.history(id: healthy.id).first)
        #expect(history.deliveries.first?.state == .delivered)
        await router.shutdown()
    }
}
