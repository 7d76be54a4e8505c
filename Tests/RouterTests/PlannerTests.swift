import ChannelAPI
import Router
import RouterTesting
import Testing

/// The planner truth table: precedence, mode first, suppression by delivery and registration,
/// filters, namespace overrides, and a disabled channel.
@Suite struct PlannerTests {
    static let hapiRoutes = """
        routes:
          default:
            - deliver: [apns, fcm]
            - deliver: [webpush]
              unless-delivered: [apns, fcm]
            - deliver: [telegram]
              when: { type: [permission-request] }
          namespaces:
            ops:
              - deliver: [telegram, webpush]
                mode: first
        """

    @Test func nativeDeliveredSuppressesWebPush() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        try await h.register("ios", "iphone")
        try await h.register("web", "laptop")
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("apns", "iphone") == .delivered)
        #expect(report.outcome("webpush", "laptop") == .suppressed)
        #expect(report.deliveries.first { $0.channel == "webpush" }?.reason == "unless-delivered: apns")
        #expect(h.webpush.requests.isEmpty)
    }

    @Test func webPushRunsWhenNativeFails() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        h.apns.answer { t, _ in .failed(t, status: 400, reason: "BadCollapseId") }
        try await h.register("ios", "iphone")
        try await h.register("web", "laptop")
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("apns") == .failed)
        #expect(report.outcome("webpush") == .delivered)
    }

    @Test func retryInFlightDoesNotCountAsDelivered() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        h.apns.answer { t, _ in .retry(t, status: 503, reason: "ServiceUnavailable") }
        try await h.register("ios", "iphone")
        try await h.register("web", "laptop")
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("apns") == .retry)
        #expect(report.outcome("webpush") == .delivered)
    }

    @Test func whenFilterByType() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        try await h.register("telegram", "chat")
        let plain = try await h.router.send(HeraldNotification(type: "ready", title: "t"))
        #expect(plain.outcome("telegram") == nil)
        let perm = try await h.router.send(HeraldNotification(type: "permission-request", title: "t"))
        #expect(perm.outcome("telegram") == .delivered)
        let plan = try h.router.explain(HeraldNotification(type: "ready", title: "t"))
        #expect(plan.steps[2].applies == false)
        #expect(plan.steps[2].notApplicableReason?.contains("permission-request") == true)
    }

    @Test func whenFilterBySeverity() async throws {
        let h = try await Harness.make(
            routes: "routes:\n  default:\n    - deliver: [sink]\n      when: { severity: [warning, error] }\n")
        #expect(try await h.router.send(HeraldNotification(title: "t", severity: .info)).deliveries.isEmpty)
        #expect(try await h.router.send(HeraldNotification(title: "t")).deliveries.isEmpty)
        #expect(try await h.router.send(HeraldNotification(title: "t", severity: .error)).outcome("sink") == .delivered)
    }

    @Test func modeFirstStopsAtFirstDeliveringChannel() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        try await h.register("telegram", "chat", namespace: "ops")
        try await h.register("web", "laptop", namespace: "ops")
        let report = try await h.router.send(HeraldNotification(namespace: "ops", title: "t"))
        #expect(report.outcome("telegram") == .delivered)
        #expect(report.outcome("webpush") == .suppressed)
        #expect(report.deliveries.first { $0.channel == "webpush" }?.reason == "mode first: delivered by telegram")
        #expect(h.webpush.requests.isEmpty)
    }

    /// More later-channel rows than one record suppresses (``StepSuppression/limit``): every one is
    /// suppressed, none sent, on SQLite (the record, then the executor's pages) and PostgreSQL (the
    /// executor's pages alone).
    @Test(arguments: StoreKind.allCases) func modeFirstSuppressesAWideLaterChannel(store kind: StoreKind)
        async throws
    {
        let h = try await Harness.make(
            routes: "routes:\n  default:\n    - deliver: [sink, fcm]\n      mode: first\n", store: kind)
        let phones = StepSuppression.limit + 5
        _ = try await h.router.register(
            (0..<phones).map { Device(deviceId: "p\($0)", platform: "phone", fields: ["token": .string("t\($0)")]) })
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("sink") == .delivered)
        let fcm = report.deliveries.filter { $0.channel == "fcm" }
        #expect(fcm.count == phones)
        #expect(fcm.allSatisfy { $0.state == .suppressed && $0.reason == "mode first: delivered by sink" })
        #expect(h.fcm.requests.isEmpty)
    }

    @Test func modeFirstFallsThrough() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        h.telegram.answer { t, _ in .dead(t, status: 403, reason: "bot was blocked by the user") }
        try await h.register("telegram", "chat", namespace: "ops")
        try await h.register("web", "laptop", namespace: "ops")
        let report = try await h.router.send(HeraldNotification(namespace: "ops", title: "t"))
        #expect(report.outcome("telegram") == .dead)
        #expect(report.outcome("webpush") == .delivered)
    }

    @Test func modeFirstSkipsChannelWithoutDevices() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        try await h.register("web", "laptop", namespace: "ops")
        let report = try await h.router.send(HeraldNotification(namespace: "ops", title: "t"))
        #expect(report.outcome("webpush") == .delivered)
    }

    @Test func namespaceOverrideReplacesDefault() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        try await h.register("ios", "iphone", namespace: "ops")
        let plan = try h.router.explain(HeraldNotification(namespace: "ops", title: "t"))
        #expect(plan.route == "namespaces.ops")
        #expect(plan.steps.count == 1)
        let report = try await h.router.send(HeraldNotification(namespace: "ops", title: "t"))
        #expect(report.deliveries.isEmpty)
        #expect(try h.router.explain(HeraldNotification(namespace: "other", title: "t")).route == "default")
    }

    @Test func unlessRegisteredSuppressesStep() async throws {
        let routes =
            "routes:\n  default:\n    - deliver: [apns]\n    - deliver: [sink]\n      unless-registered: [apns]\n"
        let h = try await Harness.make(routes: routes)
        let none = try await h.router.send(HeraldNotification(title: "t"))
        #expect(none.outcome("sink") == .delivered)
        try await h.register("ios", "iphone")
        let some = try await h.router.send(HeraldNotification(title: "t"))
        #expect(some.outcome("sink") == .suppressed)
        #expect(some.deliveries.first { $0.channel == "sink" }?.reason == "unless-registered: apns")
    }

    @Test func unlessDeliveredAny() async throws {
        let routes = "routes:\n  default:\n    - deliver: [fcm]\n    - deliver: [sink]\n      unless-delivered: any\n"
        let h = try await Harness.make(routes: routes)
        #expect(try await h.router.send(HeraldNotification(title: "t")).outcome("sink") == .delivered)
        try await h.register("phone", "pixel")
        #expect(try await h.router.send(HeraldNotification(title: "t")).outcome("sink") == .suppressed)
    }

    @Test func disabledChannelDeliversNothing() async throws {
        let channels = Harness.channelsYAML.replacingOccurrences(
            of: "apns: { type: rec-apns }", with: "apns: { type: rec-apns, enabled: false }")
        let h = try await Harness.make(routes: Self.hapiRoutes, channels: channels)
        try await h.register("ios", "iphone")
        try await h.register("web", "laptop")
        let report = try await h.router.send(HeraldNotification(title: "t"))
        #expect(report.outcome("apns") == nil)
        #expect(report.outcome("webpush") == .delivered)
        #expect(h.apns.requests.isEmpty)
        #expect(try h.router.explain(HeraldNotification(title: "t")).steps[0].channels[0].enabled == false)
    }

    @Test func tokenNeverDeliversAcrossNamespaces() async throws {
        let h = try await Harness.make(routes: Self.hapiRoutes)
        try await h.register("phone", "pixel", namespace: "a", token: "shared-token")
        try await h.register("phone", "pixel", namespace: "b", token: "shared-token")
        let a = try await h.router.send(HeraldNotification(namespace: "a", title: "t"))
        #expect(a.deliveries.isEmpty)
        let b = try await h.router.send(HeraldNotification(namespace: "b", title: "t"))
        #expect(b.outcome("fcm", "pixel") == .delivered)
    }

    /// The device counts are read only for an applicable `unless-registered` step; with empty
    /// counts the outline of any other route is the same.
    @Test func deviceCountsAreNeededOnlyForUnlessRegistered() throws {
        let registry = try ChannelRegistry([
            RecordingChannel().factory(type: "rec", platforms: ["ios"]),
            RecordingChannel().factory(type: "s", platforms: []),
        ])
        func config(_ routes: String) throws -> HeraldConfig {
            try ConfigLoader.parse(
                "version: 1\nchannels:\n  a: { type: rec }\n  b: { type: s }\nroutes:\n" + routes, registry: registry)
        }
        let n = HeraldNotification(id: "n1", type: "ping", title: "t")
        let plain = try config("  default:\n    - deliver: [a]\n    - deliver: [b]\n      unless-delivered: [a]\n")
        #expect(!Planner.needsDeviceCounts(n, config: plain))
        let counts = ["ios": 3]
        #expect(
            Planner.outline(n, config: plain, platformCounts: [:]).groups
                == Planner.outline(n, config: plain, platformCounts: counts).groups)
        let guarded = try config("  default:\n    - deliver: [b]\n      unless-registered: [a]\n")
        #expect(Planner.needsDeviceCounts(n, config: guarded))
        #expect(
            Planner.outline(n, config: guarded, platformCounts: [:]).groups
                != Planner.outline(n, config: guarded, platformCounts: counts).groups)
        // A step that does not apply to this type asks nothing.
        let otherType = try config(
            "  default:\n    - deliver: [b]\n      when: { type: [alarm] }\n      unless-registered: [a]\n")
        #expect(!Planner.needsDeviceCounts(n, config: otherType))
    }

    @Test func planIsPureData() throws {
        let registry = try ChannelRegistry([
            RecordingChannel().factory(type: "rec", platforms: ["ios"]),
            RecordingChannel().factory(type: "s", platforms: []),
        ])
        let config = try ConfigLoader.parse(
            "version: 1\nchannels:\n  a: { type: rec }\n  b: { type: s }\nroutes:\n  default:\n    - deliver: [a]\n    - deliver: [b]\n      unless-delivered: [a]\n",
            registry: registry)
        let devices = [
            Device(deviceId: "d1", platform: "ios"), Device(deviceId: "d2", platform: "web"),
            Device(namespace: "x", deviceId: "d3", platform: "ios"),
        ]
        let plan = Planner.plan(
            HeraldNotification(id: "n1", title: "t"), config: config, facts: PlanningFacts(devices: devices))
        #expect(plan.steps.count == 2)
        #expect(plan.steps[0].channels[0].devices.map(\.deviceId) == ["d1"])
        #expect(plan.steps[1].channels[0].isSink)
        #expect(plan.steps[1].unlessDelivered == .channels(["a"]))
        #expect(plan.deliveryCount == 2)
        #expect(plan.json["steps"]?.arrayValue?.count == 2)
        #expect(plan.text.contains("a [rec]: 1 device(s): d1 (ios)"))
    }
}
