import ChannelAPI
import Foundation
import HeraldSync
import RouterTesting
import Testing

@testable import Router

/// Issue 15 item 6: outbox leases expire by time and are renewed by their holder; `kill(pid, 0)`
/// may only shorten the wait for an owner of this host and PID namespace.
@Suite struct LeaseTests {
    static let routes = """
        routes:
          default:
            - deliver: [fcm]
        """

    /// A harness with one enqueued notification whose pending delivery is then claimed by `owner`
    /// for 60 s, as a `send` in another process would.
    static func leasedElsewhere(by owner: String, store: StoreKind) async throws -> (Harness, String) {
        let h = try await Harness.make(routes: routes, store: store)
        try await h.register("phone", "pixel")
        let n = HeraldNotification(title: "claimed elsewhere")
        try h.router.enqueue(n)
        let claimed = try h.router.store.claimPending(
            notificationId: n.id, step: 0, channel: "fcm", owner: owner, until: h.clock.now().adding(.seconds(60)),
            now: h.clock.now())
        #expect(claimed.count == 1)
        return (h, n.id)
    }

    /// A pid that runs nowhere here (above Linux's largest pid_max).
    static let missingPID = Int32.max

    @Test(arguments: StoreKind.allCases) func otherPIDNamespaceLeaseIsNotTakenOverBeforeExpiry(store: StoreKind)
        async throws
    {
        let local = try #require(LeaseOwner.currentHost(), "this test needs /proc")
        let otherHost = "00000000-0000-0000-0000-000000000000.4026531836"
        #expect(otherHost != local)
        let owner = LeaseOwner(pid: Self.missingPID, nonce: "abcd1234", host: otherHost).id
        let (h, id) = try await Self.leasedElsewhere(by: owner, store: store)

        try await h.router.drain()
        #expect(h.fcm.targets.isEmpty, "a live holder in another container keeps its lease")
        #expect(try h.router.store.deliveries(notificationId: id).first?.state == .pending)

        h.clock.advance(by: .seconds(59))
        try await h.router.drain()
        #expect(h.fcm.targets.isEmpty)

        h.clock.advance(by: .seconds(2))
        try await h.router.drain()
        #expect(h.fcm.targets.count == 1, "an expired lease is taken over")
        #expect(try h.router.store.deliveries(notificationId: id).first?.state == .delivered)
    }

    @Test(arguments: StoreKind.allCases) func ownerWithoutHostIsNotJudgedByPID(store: StoreKind) async throws {
        // The form older versions wrote: no host part, so no way to know whose pid it is.
        let (h, _) = try await Self.leasedElsewhere(by: "pid:\(Self.missingPID):abcd1234", store: store)
        try await h.router.drain()
        #expect(h.fcm.targets.isEmpty)
        h.clock.advance(by: .seconds(61))
        try await h.router.drain()
        #expect(h.fcm.targets.count == 1)
    }

    @Test(arguments: StoreKind.allCases) func sameHostDeadPIDIsReleasedAtOnce(store: StoreKind) async throws {
        let local = try #require(LeaseOwner.currentHost(), "this test needs /proc")
        let owner = LeaseOwner(pid: Self.missingPID, nonce: "abcd1234", host: local).id
        let (h, id) = try await Self.leasedElsewhere(by: owner, store: store)
        try await h.router.drain()
        #expect(h.fcm.targets.count == 1, "a crashed holder on this host is recovered without waiting")
        #expect(try h.router.store.deliveries(notificationId: id).first?.state == .delivered)
    }

    @Test(arguments: StoreKind.allCases) func sameHostLivePIDKeepsItsLease(store: StoreKind) async throws {
        let local = try #require(LeaseOwner.currentHost(), "this test needs /proc")
        // pid 1 always exists in this namespace (and is not this process).
        let owner = LeaseOwner(pid: 1, nonce: "abcd1234", host: local).id
        let (h, _) = try await Self.leasedElsewhere(by: owner, store: store)
        try await h.router.drain()
        #expect(h.fcm.targets.isEmpty)
    }

    /// A holder whose work outlasts the lease renews it: a second process (another owner sharing the
    /// store) that drains meanwhile finds nothing to take, and the delivery is sent once.
    @Test func longRunningHolderRenewsItsLease() async throws {
        let path = Harness.tempPath()
        let clock = ManualClock()
        let gate = GateChannel()
        let other = RecordingChannel()
        let yaml = "channels:\n  fcm: { type: rec }\n" + Self.routes
        func router(_ channel: any Channel, store: (any HeraldStore)?) async throws -> Router {
            let factory = ChannelFactory(type: "rec", defaultPlatforms: ["phone"]) { _, _ throws(ConfigError) in channel
            }
            let registry = try ChannelRegistry([factory])
            let config = try ConfigLoader.parse("version: 1\nstore: { path: \(path) }\n" + yaml, registry: registry)
            var options = RouterOptions(clock: clock, random: FixedRandom(), logSink: RecordingLogSink(), store: store)
            options.leaseDuration = .milliseconds(300)
            return try await Router(config: config, registry: registry, options: options)
        }
        let holder = try await router(gate, store: nil)
        let rival = try await router(other, store: holder.store)
        #expect(holder.owner != rival.owner)
        try await holder.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "t"]))
        let n = HeraldNotification(title: "long")
        let send = Task { try await holder.send(n) }
        defer { gate.open() }
        while gate.calls == 0 { try await Task.sleep(for: .milliseconds(10)) }

        // Far past the lease the holder is still working: its heartbeat must bring the lease back
        // ahead of the clock (the expiry is read from the injected clock, the cadence is wall time).
        clock.advance(by: .seconds(600))
        var renewed = false
        for _ in 0..<400 {
            if try !holder.store.notificationsWithPendingDeliveries(now: clock.now()).contains(n.id) {
                renewed = true
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(renewed, "the holder never renewed its lease")
        try await rival.drain()
        #expect(other.targets.isEmpty, "the rival took over a live holder's lease")

        gate.open()
        let report = try await send.value
        #expect(report.outcome("fcm") == .delivered)
        #expect(gate.calls == 1)
        try await rival.drain()
        #expect(other.targets.isEmpty)
        await rival.shutdown()
        await holder.shutdown()
    }

    @Test func ownerIDsParseAndOnlyProvenDeadOwnersAreGone() {
        let host = LeaseOwner.host(
            bootID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n", pidNamespaceLink: "pid:[4026531836]")
        #expect(host == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.4026531836")
        #expect(LeaseOwner.host(bootID: "x", pidNamespaceLink: "pid:[1]") == nil)
        #expect(LeaseOwner.host(bootID: "0f1e2d3c-4b5a", pidNamespaceLink: "net:[1]") == nil)
        let me = LeaseOwner(pid: 10, nonce: "n", host: host).id
        let dead: (Int32) -> Bool = { _ in false }
        #expect(LeaseOwner(parsing: "pid:42:abc:\(host ?? "")") == LeaseOwner(pid: 42, nonce: "abc", host: host))
        #expect(LeaseOwner(parsing: "pid:42:abc") == LeaseOwner(pid: 42, nonce: "abc", host: nil))
        #expect(LeaseOwner(parsing: "worker-7") == nil)
        #expect(LeaseOwner(parsing: "pid:x:abc") == nil)
        #expect(
            LeaseOwner.isGone("pid:42:abc:\(host ?? "")", me: me, localHost: host, currentPID: 10, processExists: dead))
        #expect(!LeaseOwner.isGone("pid:42:abc:other", me: me, localHost: host, currentPID: 10, processExists: dead))
        #expect(!LeaseOwner.isGone("pid:42:abc", me: me, localHost: host, currentPID: 10, processExists: dead))
        #expect(!LeaseOwner.isGone("worker-7", me: me, localHost: host, currentPID: 10, processExists: dead))
        #expect(
            !LeaseOwner.isGone("pid:42:abc:\(host ?? "")", me: me, localHost: nil, currentPID: 10, processExists: dead))
        #expect(
            !LeaseOwner.isGone("pid:10:zzz:\(host ?? "")", me: me, localHost: host, currentPID: 10, processExists: dead)
        )
        #expect(!LeaseOwner.isGone(me, me: me, localHost: host, currentPID: 10, processExists: dead))
        #expect(
            !LeaseOwner.isGone(
                "pid:42:abc:\(host ?? "")", me: me, localHost: host, currentPID: 10, processExists: { _ in true }))
    }
}

/// A channel whose deliveries wait until the test opens it, then deliver.
final class GateChannel: Channel {
    private let state = Locked<(calls: Int, open: Bool, waiters: [CheckedContinuation<Void, Never>])>((0, false, []))

    /// Calls of `deliver` so far.
    var calls: Int { state.withLock { $0.calls } }

    /// Lets every waiting and later delivery through.
    func open() {
        let waiters = state.withLock { s in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let go = state.withLock { s in
                s.calls += 1
                if !s.open { s.waiters.append(c) }
                return s.open
            }
            if go { c.resume() }
        }
        return request.targets.map { .delivered($0) }
    }
}
