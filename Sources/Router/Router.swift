import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldSync

/// The embedding API: a router built from a YAML file or a config value, with a device registry,
/// `send`, an outbox worker and an event stream.
///
/// ```swift
/// let router = try await Router(configPath: "herald.yaml", registry: HeraldChannels.registry)
/// try await router.register(Device(deviceId: "pixel", platform: "phone", fields: ["token": "…"]))
/// let report = try await router.send(HeraldNotification(title: "Build finished"))
/// ```
public final class Router: Sendable {
    /// The store in use.
    public let store: any HeraldStore
    let registry: ChannelRegistry
    let options: RouterOptions
    /// The clock the router was given (``RouterOptions/clock``); code around it reads the time here.
    public var clock: any HeraldClock { options.clock }
    let http: HTTPClient
    /// What channels send through: ``RouterOptions/transport``, else ``http``.
    var transport: any HTTPTransport { options.transport ?? http }
    let hub = EventHub()
    let graph: Locked<RouterGraph>
    let configPath: String?
    let logSink: any LogSink
    /// The router's log (source `router`, the configured sink and level), for code that embeds the
    /// router and reports on its work: the HTTP API logs a report it could not finish writing.
    public let logger: ChannelLogger
    let owner: String
    /// The lease owner of this router's outbox worker: this process, but not ``owner`` (see
    /// ``executor(owner:)``).
    let workerOwner: String
    /// This process's PID space (see ``LeaseOwner``); nil when unknown.
    let host: String?
    let ownsStore: Bool
    /// Whether the store could be written at the last write (``StoreHealth``): `herald serve`'s
    /// `/healthz` answers from it; the worker notes its own failures here.
    public let storeHealth = StoreHealth()
    /// The apps' open streams in this process, which `local` channels deliver through
    /// (`herald serve` attaches them).
    public let localStreams: LocalStreamHub

    /// Builds a router from the YAML file at `configPath`.
    public convenience init(configPath: String, registry: ChannelRegistry, options: RouterOptions = RouterOptions())
        async throws
    {
        let config = try ConfigLoader.load(path: configPath, environment: options.environment, registry: registry)
        try await self.init(config: config, registry: registry, options: options, path: configPath)
    }

    /// Builds a router from a loaded config value.
    public convenience init(config: HeraldConfig, registry: ChannelRegistry, options: RouterOptions = RouterOptions())
        async throws
    {
        try await self.init(config: config, registry: registry, options: options, path: nil)
    }

    init(config: HeraldConfig, registry: ChannelRegistry, options: RouterOptions, path: String?) async throws {
        self.registry = registry
        self.options = options
        self.configPath = path
        var httpConfig = config.http.applied(to: options.http)
        if httpConfig.caFile == nil { httpConfig.caFile = config.caFile }
        self.http = try HTTPClient(configuration: httpConfig)
        if let s = options.store {
            store = s
            ownsStore = false
        } else {
            store = try Router.openStore(config, clock: options.clock)
            ownsStore = true
        }
        logSink = options.logSink ?? StandardErrorLogSink(minimumLevel: config.logLevel)
        logger = ChannelLogger(source: "router", sink: logSink, clock: options.clock)
        host = LeaseOwner.currentHost()
        let nonce = String(UUID().uuidString.prefix(8))
        owner = LeaseOwner(pid: getpid(), nonce: nonce, host: host).id
        workerOwner = LeaseOwner(pid: getpid(), nonce: nonce + "w", host: host).id
        localStreams = LocalStreamHub(clock: options.clock, relay: (store as? PostgresStore)?.localRelay())
        let built = try RouterGraph.build(
            config: config, registry: registry, http: options.transport ?? http, clock: options.clock,
            random: options.random,
            logSink: logSink, store: store, localStreams: localStreams)
        graph = Locked(built)
    }

    var currentGraph: RouterGraph { graph.withLock { $0 } }

    /// The executor of `send` (first attempts), leasing as ``owner``.
    var executor: Executor { executor(owner: owner) }

    /// An executor leasing as `owner`. The outbox worker (``drain(untilEmpty:timeout:)``, ``run()``)
    /// leases as ``workerOwner``: its batch claim may take rows of a fan-out that a `send` of this
    /// process has not claimed yet, and the send must then skip them as another live owner's rows
    /// (with one owner for both, the send claimed them again and both sent them).
    func executor(owner: String) -> Executor {
        var executor = Executor(
            store: store, clock: options.clock, random: options.random, events: hub, logger: logger, owner: owner)
        executor.leaseDuration = currentGraph.config.storeLease ?? options.leaseDuration
        executor.passBudget = options.passBudget
        return executor
    }

    /// The config in force.
    public var config: HeraldConfig { currentGraph.config }

    /// A channel instance by name (for channel-specific features such as `keys vapid`).
    public func channel(named name: String) -> (any Channel)? {
        currentGraph.channels[name].map { ($0 as? SecretScrubbingChannel)?.inner ?? $0 }
    }

    /// A new subscription to router events. Each call returns an independent stream.
    public func events() -> AsyncStream<RouterEvent> { hub.subscribe() }

    // MARK: Devices

    /// Validates a device (generic rules, then every channel that will serve it: the enabled
    /// channels of its namespace's route that serve its platform) and upserts it. Throws
    /// ``ValidationError`` naming the field when one of them refuses it; nothing is stored then.
    /// A device that no channel serves is stored with an `unreachable` warning in the result.
    @discardableResult
    public func register(_ device: Device) async throws -> RegistrationResult {
        let checked = try await checkRegistration(device)
        let result = try store.upsertDevice(checked.device, now: options.clock.now())
        for channel in checked.serving { await channel.didRegister(checked.device) }
        return checked.result(result)
    }

    /// Validates every device, then upserts them all in one transaction: when one is refused
    /// (``DeviceBatchError`` with its index) or the store fails, none is stored. Each result carries
    /// the device's serving channels and warnings, as ``register(_:)-(Device)`` does.
    @discardableResult
    public func register(_ devices: [Device]) async throws -> [RegistrationResult] {
        var checked: [CheckedRegistration] = []
        for (index, device) in devices.enumerated() {
            do {
                checked.append(try await checkRegistration(device))
            } catch {
                throw DeviceBatchError(index: index, error: error)
            }
        }
        let results = try store.upsertDevices(checked.map(\.device), now: options.clock.now())
        for c in checked {
            for channel in c.serving { await channel.didRegister(c.device) }
        }
        return zip(checked, results).map { $0.result($1) }
    }

    /// A device as the channels that will serve it accepted it.
    struct CheckedRegistration {
        let device: Device
        let serving: [any Channel]
        let reach: DeviceReach
        let original: Device

        func result(_ upsert: UpsertResult) -> RegistrationResult {
            let warnings = reach.unreachableReason.map {
                [
                    RegistrationWarning(
                        code: .unreachable,
                        device: "\(original.namespace)/\(original.deviceId) (\(original.platform))", message: $0)
                ]
            }
            return RegistrationResult(
                created: upsert.created, moved: upsert.moved, channels: reach.channels, warnings: warnings ?? [])
        }
    }

    /// The generic rules and the platform's descriptor, then every channel that will serve the device (the enabled channels of
    /// its namespace's route that serve its platform).
    func checkRegistration(_ device: Device) async throws -> CheckedRegistration {
        var checked = try registry.validate(device)
        let g = currentGraph
        let reach = Planner.reach(of: device, config: g.config)
        let serving = reach.channels.compactMap { g.channels[$0] }
        for channel in serving { checked = try await channel.validateRegistration(checked) }
        checked.address = registry.address(of: checked)
        checked.addressIsSecret = registry.addressIsSecret(of: checked)
        checked.movableNamespaces = device.movableNamespaces
        return CheckedRegistration(device: checked, serving: serving, reach: reach, original: device)
    }

    /// The channels that will serve `device` under the config in force, or why none will.
    public func reach(of device: Device) -> DeviceReach { Planner.reach(of: device, config: currentGraph.config) }

    /// Unregisters by id (every platform when `platform` is nil). Returns how many were removed.
    @discardableResult
    public func unregister(namespace: String = "default", deviceId: String, platform: String? = nil) throws -> Int {
        try store.removeDevice(namespace: namespace, deviceId: deviceId, platform: platform)
    }

    /// Unregisters by token (or other address). Returns how many were removed.
    @discardableResult
    public func unregister(namespace: String = "default", token: String) throws -> Int {
        try store.removeDevice(namespace: namespace, address: token)
    }

    /// Registered devices.
    public func devices(namespace: String? = nil) throws -> [Device] { try store.devices(namespace: namespace) }

    // MARK: Sending

    /// The plan for `notification` without sending anything.
    public func explain(_ notification: HeraldNotification) throws -> DeliveryPlan {
        let g = currentGraph
        let devices = try store.devices(namespace: notification.namespace)
        return Planner.plan(notification, config: g.config, facts: PlanningFacts(devices: devices))
    }

    /// Plans and persists a notification with every planned delivery (one transaction) without
    /// attempting anything: the in-process worker (``run()``) or `herald drain` delivers it.
    /// Returns the plan.
    @discardableResult
    public func enqueue(_ notification: HeraldNotification) throws -> DeliveryPlan {
        try checkPlatformOptions(notification)
        var notification = notification
        let (key, existing) = try storageKey(for: notification)
        if existing != nil { throw StoreError.duplicateNotification(notification.id) }
        notification.id = key
        let g = currentGraph
        let cooled = try touchCooldowns(notification, graph: g, now: options.clock.now())
        let devices = try store.devices(namespace: notification.namespace)
        let plan = Planner.plan(
            notification, config: g.config, facts: PlanningFacts(devices: devices, cooledDownSteps: cooled))
        _ = try persist(notification, graph: g, cooled: cooled)
        return plan
    }

    /// Refuses options under a name no registered module declares as a platform: the notification JSON
    /// reads any lowercase object key as a plugin platform's options (``HeraldNotification/platformOptions``),
    /// so a misspelt field is caught here, as the unknown field it is.
    func checkPlatformOptions(_ notification: HeraldNotification) throws(ValidationError) {
        for name in notification.platformOptions.keys.sorted() where registry.platform(name) == nil {
            throw ValidationError(field: name, "unknown field (no channel module declares a platform '\(name)')")
        }
    }

    /// The steps whose `cooldown:` window already saw the notification's tag (stamping the others).
    func touchCooldowns(_ notification: HeraldNotification, graph g: RouterGraph, now: Date) throws -> Set<Int> {
        guard let tag = notification.collapseTag else { return [] }
        let (routeName, steps) = g.config.routes.route(for: notification.namespace)
        let keys = steps.enumerated().compactMap { i, s in s.cooldown.map { (key: "\(routeName)#\(i)", window: $0) } }
        guard !keys.isEmpty else { return [] }
        let hits = try store.touchCooldowns(namespace: notification.namespace, tag: tag, keys: keys, now: now)
        return Set(steps.indices.filter { hits.contains("\(routeName)#\($0)") })
    }

    /// Persists a notification with every planned delivery (one transaction), streaming: the planner
    /// outlines the outbox from the namespace's device count per platform and the store expands it
    /// against the devices page by page (``HeraldStore/insertNotification(_:steps:groups:now:suppressed:)``),
    /// so no list of devices or deliveries is held. Returns what `send` executes from.
    func persist(
        _ notification: HeraldNotification, graph g: RouterGraph, cooled: Set<Int>? = nil, leased: Bool = false
    ) throws -> StoredNotification {
        let now = options.clock.now()
        let cooled = try cooled ?? touchCooldowns(notification, graph: g, now: now)
        let counts =
            Planner.needsDeviceCounts(notification, config: g.config, cooledDownSteps: cooled)
            ? try store.devicePlatformCounts(namespace: notification.namespace) : [:]
        let outline = Planner.outline(
            notification, config: g.config, platformCounts: counts, cooledDownSteps: cooled)
        let hub = self.hub
        // A send attempts its rows at once: they are born leased to this process's sender, so the
        // in-process worker (or another host's) does not take them first and leave the send's report
        // showing them untried. A sender that dies leaves them claimable when the lease runs out.
        let lease = leased ? OutboxLease(owner: owner, until: now.adding(executor.leaseDuration)) : nil
        _ = try store.insertNotification(
            notification, steps: outline.steps, groups: outline.groups, lease: lease, now: now
        ) { hub.emit(.delivery($0)) }
        if let tag = notification.collapseTag {
            try store.addBadgeTag(namespace: notification.namespace, tag: tag, now: now)
        }
        return StoredNotification(
            notification: notification, createdAt: now, steps: outline.steps, leasedUntil: lease?.until)
    }

    /// Routes one notification: plans it, persists it with every planned delivery (one
    /// transaction), then runs the first attempts step by step and returns the report. Transient
    /// failures stay queued in the outbox for ``drain(untilEmpty:timeout:)`` or ``run()``.
    ///
    /// Idempotent by id: a notification whose `id` is already stored is not routed again; the
    /// stored report is returned with ``DeliveryReport/replayed`` set.
    ///
    /// The report lists every delivery. For a large fan-out, ``sendSummarized(_:)`` with
    /// ``forEachDelivery(of:_:)`` does the same work with memory that does not grow with the fan-out.
    public func send(_ notification: HeraldNotification) async throws -> DeliveryReport {
        let summary = try await sendSummarized(notification)
        return DeliveryReport(
            id: summary.id, namespace: summary.namespace,
            deliveries: try store.deliveries(notificationId: summary.id), replayed: summary.replayed)
    }

    /// Routes one notification as ``send(_:)`` does and returns its delivery counts instead of every
    /// delivery: planning, persisting, sending and recording stream in bounded pages, so a
    /// 100,000-device fan-out runs in memory that does not grow with it. Read the deliveries with
    /// ``forEachDelivery(of:_:)``.
    public func sendSummarized(_ notification: HeraldNotification) async throws -> SendSummary {
        try checkPlatformOptions(notification)
        // Ids are unique per namespace: the key is the id, or its scoped form when another
        // namespace holds the id; a key stored meanwhile by another sender is looked up again.
        for _ in 0..<3 {
            let (key, existing) = try storageKey(for: notification)
            if let existing {
                return try summary(id: key, namespace: existing.notification.namespace, replayed: true)
            }
            var keyed = notification
            keyed.id = key
            let g = currentGraph
            let stored: StoredNotification
            do {
                stored = try persist(keyed, graph: g, leased: true)
            } catch {
                // Another sender stored the same key between the look-up and the insert.
                if try store.notification(id: key) != nil { continue }
                throw error
            }
            try await executor.execute(stored, graph: g)
            return try summary(id: key, namespace: notification.namespace, replayed: false)
        }
        throw StoreError.duplicateNotification(notification.id)
    }

    /// The key `notification` is stored under (``NotificationKey``) and what is stored there: its
    /// own id when that is free or holds this namespace's notification, else the id scoped to the
    /// namespace (another namespace sent the id first). A stored notification returned is always of
    /// `notification`'s namespace: a replay never answers another namespace's report.
    public func storageKey(for notification: HeraldNotification) throws -> (
        key: String, stored: StoredNotification?
    ) {
        if !NotificationKey.isScoped(notification.id) {
            guard let plain = try store.notification(id: notification.id) else { return (notification.id, nil) }
            if plain.notification.namespace == notification.namespace { return (notification.id, plain) }
        }
        let key =
            NotificationKey.isScoped(notification.id)
            ? notification.id : NotificationKey.scoped(notification.id, namespace: notification.namespace)
        let scoped = try store.notification(id: key)
        guard scoped == nil || scoped?.notification.namespace == notification.namespace else {
            throw StoreError.duplicateNotification(notification.id)
        }
        return (key, scoped)
    }

    /// The stored notifications a client's id names in the namespaces `covers` accepts, as
    /// (key, namespace): one, or several when the caller covers several namespaces that each sent
    /// the id (``NotificationKey``). Read by the HTTP API's routes that take an id.
    public func notificationKeys(publicID id: String, covering covers: (String) -> Bool) throws -> [(
        key: String, namespace: String
    )] {
        if NotificationKey.isScoped(id) {
            guard let stored = try store.notification(id: id), covers(stored.notification.namespace) else { return [] }
            return [(id, stored.notification.namespace)]
        }
        return try store.notificationKeys(publicID: id).filter { covers($0.namespace) }
    }

    /// Calls `body` with every delivery of a notification (in report order), read from the store in
    /// pages: the streaming counterpart of ``DeliveryReport/deliveries``.
    public func forEachDelivery(of notificationId: String, _ body: (DeliveryRecord) throws -> Void) throws {
        try store.forEachDelivery(notificationId: notificationId, body)
    }

    /// Writes `summary`'s delivery report as its canonical JSON (the bytes of ``DeliveryReport/json``
    /// and a newline), reading the deliveries in pages and handing `write` pieces of about `piece`
    /// bytes: `herald send --format json` prints it so, and `POST /v1/notifications` streams it.
    /// A throw from `write` stops it.
    public func writeReportJSON(of summary: SendSummary, piece: Int, _ write: ([UInt8]) throws -> Void) throws {
        var buffer: [UInt8] = Array(#"{"deliveries":["#.utf8)
        buffer.reserveCapacity(piece + 1_024)
        var first = true
        try store.forEachDelivery(notificationId: summary.id) { d in
            if !first { buffer.append(UInt8(ascii: ",")) }
            first = false
            d.writeReportJSON(into: &buffer)
            if buffer.count >= piece {
                try write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        buffer.append(contentsOf: #"],"id":"#.utf8)
        buffer.append(contentsOf: JSONValue.string(NotificationKey.publicID(of: summary.id)).canonicalBytes)
        buffer.append(contentsOf: #","namespace":"#.utf8)
        buffer.append(contentsOf: JSONValue.string(summary.namespace).canonicalBytes)
        buffer.append(contentsOf: (summary.replayed ? #","replayed":true}"# : "}").utf8)
        buffer.append(0x0A)
        try write(buffer)
    }

    private func summary(id: String, namespace: String, replayed: Bool) throws -> SendSummary {
        var counts: [DeliveryState: Int] = [:]
        for t in try store.deliveryTallies(notificationId: id) { counts[t.state, default: 0] += t.count }
        return SendSummary(id: id, namespace: namespace, counts: counts, replayed: replayed)
    }

    // MARK: Reload and shutdown

    /// Reloads the config file this router was built from. An invalid file keeps the old graph and
    /// throws its ``ConfigError``; deliveries in flight finish under the graph they started with.
    @discardableResult
    public func reload() async throws -> [ConfigWarning] {
        commit(try prepareReload())
    }

    /// Swaps in a new config value (see ``reload()``).
    @discardableResult
    public func reload(config: HeraldConfig) throws -> [ConfigWarning] {
        commit(try prepareReload(config: config))
    }

    /// A config loaded and every channel built, ready to go live with ``commit(_:)``; nothing of it is
    /// live before. Dropping it changes nothing.
    public struct PreparedReload: Sendable {
        let graph: RouterGraph
        /// The config it was built from.
        public var config: HeraldConfig { graph.config }
    }

    /// Loads the config file this router was built from and builds every channel of it, without
    /// putting any of it live: the first half of an all-or-nothing reload, whose caller checks what
    /// else the new config needs (its `server:` section) before ``commit(_:)``. Throws (and emits
    /// ``RouterEvent/reloadFailed(_:)``) when the file or a channel is invalid; the config in force is
    /// untouched either way.
    public func prepareReload() throws -> PreparedReload {
        guard let configPath else {
            throw ConfigError(file: "<config>", mark: nil, "this router was not built from a file")
        }
        let config: HeraldConfig
        do {
            config = try ConfigLoader.load(path: configPath, environment: options.environment, registry: registry)
        } catch {
            hub.emit(.reloadFailed(error))
            throw error
        }
        return try prepareReload(config: config)
    }

    /// Builds every channel of `config` without putting it live (see ``prepareReload()``).
    public func prepareReload(config: HeraldConfig) throws -> PreparedReload {
        do {
            return PreparedReload(
                graph: try RouterGraph.build(
                    config: config, registry: registry, http: transport, clock: options.clock, random: options.random,
                    logSink: logSink, store: store, localStreams: localStreams))
        } catch {
            hub.emit(.reloadFailed(error))
            throw error
        }
    }

    /// Puts a prepared config live at once (its routes, channels and settings) and returns its
    /// warnings; deliveries in flight finish under the graph they started with.
    @discardableResult
    public func commit(_ prepared: PreparedReload) -> [ConfigWarning] {
        graph.withLock { $0 = prepared.graph }
        hub.emit(.reloaded(warnings: prepared.config.warnings))
        return prepared.config.warnings
    }

    /// Drops a prepared config that its caller found unfit after ``prepareReload()`` (`herald serve`:
    /// its `server:` section), emitting ``RouterEvent/reloadFailed(_:)``; nothing of it was live.
    public func refuse(_ prepared: PreparedReload, because error: ConfigError) {
        hub.emit(.reloadFailed(error))
    }

    /// Shuts channels and the HTTP client down and ends every event stream.
    public func shutdown() async {
        let g = currentGraph
        for (_, c) in g.channels { await c.shutdown() }
        await http.shutdown()
        hub.finish()
        localStreams.close()
        if ownsStore, let s = store as? SQLiteStore { s.close() }
        if ownsStore, let s = store as? PostgresStore { s.close() }
    }

    /// The store a config names: PostgreSQL when it has a `store.url` (or `HERALD_STORE_URL`),
    /// else the SQLite file at `store.path`.
    static func openStore(_ config: HeraldConfig, clock: any HeraldClock) throws -> any HeraldStore {
        if let url = config.storeURL {
            return try PostgresStore(url: url, clock: clock, preparedStatements: config.storePreparedStatements)
        }
        return try SQLiteStore(
            path: config.storePath, clock: clock, cacheBytes: config.storeCache ?? SQLiteStore.defaultCacheBytes)
    }

    /// Waits up to `wait` for new work: a `NOTIFY` from another process on a PostgreSQL store,
    /// otherwise (and as the fallback) a plain sleep on the injected clock.
    func idle(for wait: Duration) async throws {
        if let pg = store as? PostgresStore, options.clock is SystemClock {
            _ = await pg.waitForWork(timeout: wait)
            try Task.checkCancellation()
        } else {
            try await options.clock.sleep(for: wait)
        }
    }
}

/// Hands channel events to the router.
struct RouterEventSink: ChannelEventSink {
    let router: Router
    func record(_ event: ChannelEvent) async throws { try router.recordEvent(event) }
}

extension Router {
    /// Loads a config and builds every channel (so channel-specific errors surface) without
    /// touching the configured store or the network. Returns the config with its warnings.
    ///
    /// `offline` checks everything except the presence of files and environment secrets (see
    /// ``ConfigNode/offline``): what `herald validate --offline` runs in CI, without production keys.
    public static func validate(
        configPath: String, registry: ChannelRegistry,
        environment: [String: String] = ProcessInfo.processInfo.environment, offline: Bool = false
    ) throws -> HeraldConfig {
        let config = try ConfigLoader.load(
            path: configPath, environment: environment, registry: registry, offline: offline)
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        let http = try HTTPClient(configuration: HTTPClientConfiguration())
        _ = try RouterGraph.build(
            config: config, registry: registry, http: http, clock: SystemClock(), random: SystemRandom(),
            logSink: StandardErrorLogSink(), store: store)
        return config
    }

    /// The plan for `notification` under the config at `configPath` and the devices in its store,
    /// as a dry run: the config is checked offline (``validate(configPath:registry:environment:offline:)``),
    /// no credential file or secret is needed, nothing is sent and no channel is contacted.
    public static func explain(
        _ notification: HeraldNotification, configPath: String, registry: ChannelRegistry,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> DeliveryPlan {
        let config = try validate(configPath: configPath, registry: registry, environment: environment, offline: true)
        let store = try openStore(config, clock: SystemClock())
        defer {
            (store as? SQLiteStore)?.close()
            (store as? PostgresStore)?.close()
        }
        let devices = try store.devices(namespace: notification.namespace)
        return Planner.plan(notification, config: config, facts: PlanningFacts(devices: devices))
    }
}

/// The first failure of a worker pass, shared by its concurrent parts; once set, they start nothing new.
final class PassFailure: Sendable {
    private let first = Locked<(any Error)?>(nil)

    /// The failure, if one was set.
    var error: (any Error)? { first.withLock { $0 } }

    /// Keeps `error` unless a failure was already set.
    func set(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }
}
