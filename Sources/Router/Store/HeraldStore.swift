import ChannelAPI
import Foundation

/// Everything Herald persists: devices, notifications and their outbox, attempts, lifecycle
/// events, channel state, badge tags and cooldowns. ``SQLiteStore`` is the embedded default; a
/// server database can implement the same protocol.
public protocol HeraldStore: Sendable {
    // MARK: Devices
    /// Inserts or replaces the device with key (namespace, deviceId, platform); any other
    /// registration with the same address (token, endpoint, chat) is removed, in one transaction.
    func upsertDevice(_ device: Device, now: Date) throws -> UpsertResult
    /// Upserts every device as ``upsertDevice(_:now:)`` does, all or nothing: when one fails, none is
    /// stored. Results are in input order.
    func upsertDevices(_ devices: [Device], now: Date) throws -> [UpsertResult]
    /// Removes by key; `platform` nil removes every platform of that device id. Returns the count.
    func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int
    /// Removes every registration with this address (token) in `namespace`. Returns the count.
    func removeDevice(namespace: String, address: String) throws -> Int
    /// Devices, optionally of one namespace, ordered by namespace, deviceId, platform.
    func devices(namespace: String?) throws -> [Device]
    /// One device.
    func device(namespace: String, deviceId: String, platform: String) throws -> Device?

    // MARK: Notifications and outbox
    /// Persists a notification and every planned delivery in one transaction, before any attempt.
    func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord], now: Date) throws
    /// A stored notification with the step rules it was planned with.
    func notification(id: String) throws -> StoredNotification?
    /// The deliveries of a notification, ordered by step, position, device.
    func deliveries(notificationId: String) throws -> [DeliveryRecord]
    /// Claims the `pending` deliveries of one (notification, step, channel) for `owner` until
    /// `until` and returns them. Rows leased by another live owner are skipped.
    func claimPending(notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date) throws
        -> [DeliveryRecord]
    /// Claims up to `limit` `retry` deliveries due at `now`.
    func claimDue(owner: String, until: Date, now: Date, limit: Int) throws -> [DeliveryRecord]
    /// Marks deliveries `suppressed` with `reason` (only those still `pending`).
    func suppress(deliveryIds: [String], reason: String, now: Date) throws
    /// Applies attempt results, removing dead devices in the same transaction. Returns the removed devices.
    func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device]
    /// Applies attempt results as ``record(_:now:)`` does and, when one of them is `delivered`, may
    /// mark `suppression`'s pending deliveries `suppressed` in the same transaction (a `mode: first`
    /// step's later channels), at most ``StepSuppression/limit`` of them. Returns the removed devices,
    /// the deliveries it suppressed (as they are now), and `complete`: true when a delivered result
    /// was recorded and no pending delivery of the rule is left; otherwise the caller suppresses
    /// (what is left). The default (in `StepSuppression.swift`) records only.
    func record(_ attempts: [AttemptRecord], now: Date, suppressing suppression: StepSuppression) throws
        -> (removed: [Device], suppressed: [DeliveryRecord], complete: Bool)
    /// Notifications with `pending` deliveries not leased by a live owner (crash recovery).
    func notificationsWithPendingDeliveries(now: Date) throws -> [String]
    /// Releases every lease of `owners` at once (owners known to be gone; others expire by time).
    func releaseLeases(ownedBy owners: [String]) throws
    /// Moves `owner`'s leases on `deliveryIds` to expire at `until`: later, as the holder's heartbeat,
    /// or in the past, to give them up. Rows no longer leased by `owner` (recorded, released, or
    /// taken over after expiry) are left alone.
    func renewLeases(owner: String, deliveryIds: [String], until: Date) throws
    /// Distinct current lease owners.
    func leaseOwners() throws -> [String]
    /// The earliest `nextAttemptAt` of any `retry` delivery.
    func nextDueTime() throws -> Date?
    /// Counts of deliveries by state (for drain progress and tests).
    func deliveryCounts() throws -> [DeliveryState: Int]
    /// The deliveries still to do: `pending` and `retry` rows. What a worker pass needs after each
    /// drain; unlike ``deliveryCounts()`` it reads only those rows (the stores count them in their
    /// partial indexes), not the whole history.
    func outstandingCounts() throws -> (pending: Int, retry: Int)

    // MARK: Lifecycle and history
    /// Records an event; throws ``StoreError/unknownNotification(_:)`` for an unknown id.
    func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent
    /// Records each event as ``recordEvent(_:)`` does, all in one transaction (group commit), and
    /// returns one result per event, in input order: an event that fails (an unknown notification)
    /// fails alone. Throws only when the batch as a whole could not be stored; then none of it is.
    func recordEvents(_ events: [LifecycleEvent]) throws -> [Result<LifecycleEvent, any Error>]
    /// Events of a notification, oldest first.
    func events(notificationId: String) throws -> [LifecycleEvent]
    /// Notifications with deliveries and events, newest first.
    func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry]
    /// The page of `namespace`'s history after the notification `before` (newest first, as
    /// ``history(namespace:id:limit:)`` orders it), read by its position (keyset), so a page costs
    /// the same however deep it is. Nil when `before` is not a notification of `namespace`.
    func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]?
    /// Deletes notifications (and their deliveries and events) created before `date` that have no
    /// pending or retry deliveries. Returns the count.
    func purge(before date: Date) throws -> Int

    // MARK: Channel state, badges, cooldowns
    /// The key/value area of one channel.
    func channelState(_ channel: String) -> any ChannelStateStore
    /// Adds a tag to the namespace's pending set.
    func addBadgeTag(namespace: String, tag: String, now: Date) throws
    /// Distinct pending tags of the namespace.
    func pendingTagCount(namespace: String) throws -> Int
    /// Clears the namespace's pending tags (an engagement signal).
    func clearBadge(namespace: String) throws
    /// For each (key, window): true when `tag` was seen under that key within the window. Keys not
    /// hit are stamped with `now`, so the next repeat within the window is a hit.
    func touchCooldowns(namespace: String, tag: String, keys: [(key: String, window: Duration)], now: Date) throws
        -> Set<String>

    // MARK: Event log
    /// Event-log entries with a sequence number above `after`, oldest first, at most `limit`; only
    /// those of `namespaces` when given (nil: every namespace). Entries are written by the store
    /// itself, in the same transaction as the change they report: `insertNotification` (kind
    /// `notification`), `suppress` and `record` (kind `delivery`, one per delivery outcome), and
    /// `recordEvent` (the lifecycle kind). Sequence numbers increase in commit order, so a reader
    /// that has seen `n` never later finds an entry below `n` it did not see.
    func eventLog(after: Int64, namespaces: [String]?, limit: Int) throws -> [EventLogEntry]
    /// The highest sequence number written so far (0 for an empty log).
    func lastEventSequence() throws -> Int64

    // MARK: fanout (streaming send path; defaults at the end of this file)
    /// Persists a notification and the rows of `groups` in one transaction, as
    /// ``insertNotification(_:steps:deliveries:now:)`` does, expanding each group against the devices
    /// registered in the notification's namespace (in device order) as the rows are written, so the
    /// deliveries need not all be in memory. With a `lease`, the pending rows are stored already
    /// claimed by its owner until its `until` (a sender about to attempt them), so no other owner
    /// claims them first. Calls `suppressed` for every row stored `suppressed` (after the transaction
    /// commits). Returns the number of rows.
    func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup], lease: OutboxLease?,
        now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> Int
    /// The number of devices per platform registered in `namespace` (nil: in every namespace).
    func devicePlatformCounts(namespace: String?) throws -> [String: Int]
    /// The namespaces with at least one device among those `patterns` cover (exact names, or a
    /// prefix before a trailing `*`), reading only those namespaces' rows.
    func deviceNamespaces(covering patterns: [String]) throws -> Set<String>
    /// The stored notifications a client's id names, with their namespaces: the one stored under
    /// the id itself and those stored under a scoped key of it (``NotificationKey``), at most one per
    /// namespace.
    func notificationKeys(publicID: String) throws -> [(key: String, namespace: String)]
    /// The `pending` and `retry` deliveries counted per namespace of their notification.
    func outstandingCountsByNamespace() throws -> [String: (pending: Int, retry: Int)]
    /// The devices of `namespace` with these (deviceId, platform) keys; unknown keys are left out.
    func devices(namespace: String, keys: [(deviceId: String, platform: String)]) throws -> [Device]
    /// The deliveries of a notification counted by (step, channel, state).
    func deliveryTallies(notificationId: String) throws -> [DeliveryTally]
    /// Claims at most `limit` `pending` deliveries of one (notification, step, channel) as
    /// ``claimPending(notificationId:step:channel:owner:until:now:)`` does, starting after the page
    /// position `after` (0 for the first page; then the previous page's ``ClaimPage/next``), so rows of
    /// earlier pages still in flight are not claimed again.
    func claimPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage
    /// The `pending` deliveries of one (notification, step, channel) leased to `owner`, in the pages
    /// of ``claimPending(notificationId:step:channel:owner:until:now:after:limit:)``, read without
    /// claiming them: for rows born leased to the caller (a send's, ``NotificationInsert``'s lease),
    /// while at least half of that lease is left. The default claims them.
    func leasedPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage
    /// Calls `body` with every delivery of a notification in the order of
    /// ``deliveries(notificationId:)``, reading them in pages.
    func forEachDelivery(notificationId: String, _ body: (DeliveryRecord) throws -> Void) throws
    // MARK: pg
    /// Claims pending deliveries of many notifications at once for the batched drain (default
    /// implementation at the end of this file).
    func claimPendingBatch(owner: String, until: Date, now: Date, limit: Int) throws -> PendingBatch
    // serve (group commit): defaults at the end of this file.
    /// Persists each notification as ``insertNotification(_:steps:deliveries:now:)`` does; see the
    /// default at the end of this file.
    func insertNotifications(
        _ items: [NotificationInsert], now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> [Result<Int, any Error>]
    /// Upserts each device as ``upsertDevice(_:now:)`` does, each on its own; see the default at the end
    /// of this file.
    func upsertDevicesIndividually(_ devices: [Device], now: Date) throws -> [Result<UpsertResult, any Error>]
    // relay history (docs/relay-server.md): defaults in HeraldStore+RelayHistory.swift (none kept).
    /// Appends relay requests in one transaction and keeps only the newest `keep` of them.
    func recordRelayRequests(_ records: [RelayRequestRecord], keep: Int) throws
    /// The newest relay requests first, at most `limit`, of one protocol when `relay` is given.
    func relayRequests(relay: String?, limit: Int) throws -> [RelayRequestRecord]
    /// The kept relay requests counted by protocol and status, with their pushes by outcome.
    func relayRequestTallies() throws -> [RelayRequestTally]
}

extension HeraldStore {
    /// See ``HeraldStore``: the plain key only (SQLiteStore and PostgresStore find scoped keys too).
    public func notificationKeys(publicID: String) throws -> [(key: String, namespace: String)] {
        guard let stored = try notification(id: publicID) else { return [] }
        return [(publicID, stored.notification.namespace)]
    }

    /// See ``HeraldStore``: from every device (SQLiteStore and PostgresStore read only the covered
    /// namespaces).
    public func deviceNamespaces(covering patterns: [String]) throws -> Set<String> {
        Set(try devices(namespace: nil).map(\.namespace).filter { Self.covers(patterns, $0) })
    }

    /// See ``HeraldStore``: from every delivery (SQLiteStore and PostgresStore count in the database).
    public func outstandingCountsByNamespace() throws -> [String: (pending: Int, retry: Int)] {
        var out: [String: (pending: Int, retry: Int)] = [:]
        for entry in try history(namespace: nil, id: nil, limit: Int.max) {
            for d in entry.deliveries where d.state == .pending || d.state == .retry {
                var c = out[entry.notification.namespace] ?? (0, 0)
                if d.state == .pending { c.pending += 1 } else { c.retry += 1 }
                out[entry.notification.namespace] = c
            }
        }
        return out
    }

    /// Whether `patterns` (exact names, or a prefix before a trailing `*`) cover `namespace`.
    public static func covers(_ patterns: [String], _ namespace: String) -> Bool {
        patterns.contains { p in p.hasSuffix("*") ? namespace.hasPrefix(p.dropLast()) : p == namespace }
    }

    /// See ``HeraldStore``: a store without a keyset reads growing windows until it finds `before`
    /// (SQLiteStore and PostgresStore answer by keyset).
    public func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]? {
        var window = limit + 50
        while true {
            let all = try history(namespace: namespace, id: nil, limit: window)
            if let i = all.firstIndex(where: { $0.notification.id == before }) {
                return Array(all[(i + 1)...].prefix(limit))
            }
            guard all.count == window else { return nil }
            window *= 4
        }
    }

    /// The default for stores without transactions across calls: one ``upsertDevice(_:now:)`` each,
    /// so it is not atomic. ``SQLiteStore`` overrides it with one transaction.
    public func upsertDevices(_ devices: [Device], now: Date) throws -> [UpsertResult] {
        try devices.map { try upsertDevice($0, now: now) }
    }
}

/// Store failures that are not SQLite errors, each naming what a person can act on.
public enum StoreError: Error, Sendable, CustomStringConvertible, Equatable {
    /// No notification with this id.
    case unknownNotification(String)
    /// Stored data could not be decoded.
    case corrupt(String)
    /// A notification with this id is already stored (sending it again must not route it again).
    case duplicateNotification(String)
    /// The file exists but is not a Herald store (empty, not SQLite, or SQLite without Herald's
    /// schema); it was not opened and nothing in it was changed.
    case notAStore(path: String, reason: String)
    /// The store was written by a newer Herald (schema `version`; this build knows up to `supported`).
    case newerSchema(path: String, version: Int, supported: Int)
    /// The store file could not be opened or created.
    case cannotOpen(path: String, reason: String)
    /// A write was refused because the store is read-only; `refused` says what could not be done.
    case readOnly(path: String, refused: String, reason: String)
    /// A write the outbox depends on (claiming, recording results) failed; the run stops there so
    /// nothing is sent whose result cannot be recorded. `detail` is the store's own: where it is,
    /// what failed, and what to check for that kind of store.
    case writeFailed(operation: String, detail: String)
    /// The store's database server cannot be reached (down, restarting, or refusing the login);
    /// `store` is its URL without the password. Nothing was changed by the failed call.
    case unreachable(store: String, detail: String)

    /// A readable message.
    public var description: String {
        switch self {
        case .unknownNotification(let id): "unknown notification \(id)"
        case .corrupt(let what): "corrupt store data: \(what)"
        case .duplicateNotification(let id): "notification \(id) is already stored"
        case .notAStore(let path, let reason):
            "\(path) is not a Herald store: \(reason). It was not opened and nothing was changed; "
                + "restore it from a backup, or move it away to start an empty store"
        case .newerSchema(let path, let version, let supported):
            "\(path) has store schema version \(version), newer than this herald supports (\(supported)); "
                + "use a newer herald"
        case .cannotOpen(let path, let reason): "cannot open the store \(path): \(reason)"
        case .readOnly(let path, let refused, let reason):
            "cannot \(refused): the store \(path) is read-only (\(reason))"
        case .writeFailed(let operation, let detail):
            "cannot \(operation) in the store: \(detail). Stopped: nothing more is sent until the store "
                + "can record results"
        case .unreachable(let store, let detail):
            "the store database \(store) is unreachable: \(detail). Nothing was stored; try again when it is back"
        }
    }
}

// MARK: fanout

extension HeraldStore {
    /// The default: expands the groups against ``devices(namespace:)`` in memory and calls
    /// ``insertNotification(_:steps:deliveries:now:)`` (one transaction). ``SQLiteStore`` streams instead.
    public func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup], lease: OutboxLease?,
        now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> Int {
        var keys: [(deviceId: String, platform: String)] = []
        if groups.contains(where: { $0.platforms != nil }) {
            keys = try devices(namespace: notification.namespace).map { ($0.deviceId, $0.platform) }
        }
        let rows = OutboxGroup.expand(groups, notificationId: notification.id, devices: keys, now: now)
        try insertNotification(notification, steps: steps, deliveries: rows, now: now)
        if let lease {
            // Not atomic with the insert (this default has no transaction across calls): the rows
            // are claimed for the sender right after it.
            var claimed: Set<String> = []
            for r in rows where r.state == .pending && claimed.insert("\(r.step)/\(r.channel)").inserted {
                _ = try claimPending(
                    notificationId: notification.id, step: r.step, channel: r.channel, owner: lease.owner,
                    until: lease.until, now: now)
            }
        }
        for r in rows where r.state == .suppressed { suppressed(r) }
        return rows.count
    }

    /// ``insertNotification(_:steps:groups:lease:now:suppressed:)`` with no lease: the rows are free
    /// for any worker at once (what `enqueue` stores).
    public func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup], now: Date,
        suppressed: (DeliveryRecord) -> Void
    ) throws -> Int {
        try insertNotification(
            notification, steps: steps, groups: groups, lease: nil, now: now, suppressed: suppressed)
    }

    /// The default: from ``deliveryCounts()``.
    public func outstandingCounts() throws -> (pending: Int, retry: Int) {
        let counts = try deliveryCounts()
        return (counts[.pending] ?? 0, counts[.retry] ?? 0)
    }

    /// The default: counts ``devices(namespace:)``.
    public func devicePlatformCounts(namespace: String?) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for d in try devices(namespace: namespace) { counts[d.platform, default: 0] += 1 }
        return counts
    }

    /// The default: one ``device(namespace:deviceId:platform:)`` per key.
    public func devices(namespace: String, keys: [(deviceId: String, platform: String)]) throws -> [Device] {
        try keys.compactMap { try device(namespace: namespace, deviceId: $0.deviceId, platform: $0.platform) }
    }

    /// The default: tallies ``deliveries(notificationId:)``.
    public func deliveryTallies(notificationId: String) throws -> [DeliveryTally] {
        DeliveryTally.of(try deliveries(notificationId: notificationId))
    }

    /// The default: the first page claims every pending row
    /// (``claimPending(notificationId:step:channel:owner:until:now:)``); there is no next page.
    public func claimPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage {
        guard after == 0 else { return ClaimPage(records: [], next: nil) }
        return ClaimPage(
            records: try claimPending(
                notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now),
            next: nil)
    }

    /// The default: claims them (``claimPending(notificationId:step:channel:owner:until:now:after:limit:)``).
    public func leasedPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage {
        try claimPending(
            notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now,
            after: after, limit: limit)
    }

    /// The default: ``deliveries(notificationId:)`` at once.
    public func forEachDelivery(notificationId: String, _ body: (DeliveryRecord) throws -> Void) throws {
        for r in try deliveries(notificationId: notificationId) { try body(r) }
    }
}

// MARK: pg

/// Pending deliveries of many notifications, claimed at once by the batched drain
/// (``HeraldStore/claimPendingBatch(owner:until:now:limit:)``), with the notifications they belong to.
public struct PendingBatch: Sendable {
    /// The claimed deliveries, leased to the claimer, ordered by id.
    public var deliveries: [DeliveryRecord]
    /// The stored notifications of ``deliveries``, by id.
    public var notifications: [String: StoredNotification]

    /// A batch.
    public init(deliveries: [DeliveryRecord], notifications: [String: StoredNotification]) {
        self.deliveries = deliveries
        self.notifications = notifications
    }
}

extension HeraldStore {
    /// Claims up to about `limit` `pending` deliveries across notifications for `owner` until `until`
    /// and returns them with their notifications. Only deliveries of each notification's current
    /// step (its lowest step that still has `pending` deliveries) are claimed, so a later step never
    /// starts before every delivery of the earlier ones has been attempted. Rows leased by another
    /// owner whose lease has not expired at `now` are skipped.
    ///
    /// The default is built from ``notificationsWithPendingDeliveries(now:)`` and
    /// ``claimPending(notificationId:step:channel:owner:until:now:)`` (whole steps, so it may return
    /// more than `limit`; rows this owner already holds are claimed again, so a caller must not
    /// claim while it holds pending rows). ``PostgresStore`` and ``SQLiteStore`` claim in one
    /// statement and never take rows this owner already holds.
    public func claimPendingBatch(owner: String, until: Date, now: Date, limit: Int) throws -> PendingBatch {
        var claimed: [DeliveryRecord] = []
        var notifications: [String: StoredNotification] = [:]
        for id in try notificationsWithPendingDeliveries(now: now) {
            guard claimed.count < max(1, limit) else { break }
            guard let stored = try notification(id: id) else { continue }
            let pending = try deliveries(notificationId: id).filter { $0.state == .pending }
            guard let step = pending.map(\.step).min() else { continue }
            var channels: [String] = []
            for r in pending where r.step == step && !channels.contains(r.channel) { channels.append(r.channel) }
            var got: [DeliveryRecord] = []
            for channel in channels {
                got += try claimPending(
                    notificationId: id, step: step, channel: channel, owner: owner, until: until, now: now)
            }
            if !got.isEmpty {
                claimed += got
                notifications[id] = stored
            }
        }
        return PendingBatch(deliveries: claimed, notifications: notifications)
    }
}

// MARK: serve

extension HeraldStore {
    /// Persists every item (its deliveries as ``insertNotification(_:steps:deliveries:now:)`` stores
    /// them, its groups expanded as ``insertNotification(_:steps:groups:now:suppressed:)`` does) and
    /// returns one result per item, in input order: the number of rows stored for it, or its error (an
    /// item that fails, ``StoreError/duplicateNotification(_:)`` or a refused row, fails alone and the
    /// others are stored). `suppressed` gets the rows suppressed at plan time of the stored items.
    /// Throws only when the batch as a whole could not be stored; then none of it is.
    ///
    /// This default stores each item in its own transaction. ``SQLiteStore`` overrides it with one
    /// transaction for the whole batch (a savepoint per item): group commit.
    public func insertNotifications(
        _ items: [NotificationInsert], now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> [Result<Int, any Error>] {
        items.map { item in
            Result {
                if item.deliveries.isEmpty {
                    var planSuppressed: [DeliveryRecord] = []
                    let rows = try insertNotification(
                        item.notification, steps: item.steps, groups: item.groups, now: now
                    ) { planSuppressed.append($0) }
                    for r in planSuppressed { suppressed(r) }
                    return rows
                }
                var rows = item.deliveries
                if !item.groups.isEmpty {
                    var keys: [(deviceId: String, platform: String)] = []
                    if item.groups.contains(where: { $0.platforms != nil }) {
                        keys = try devices(namespace: item.notification.namespace).map { ($0.deviceId, $0.platform) }
                    }
                    rows += OutboxGroup.expand(
                        item.groups, notificationId: item.notification.id, devices: keys, now: now)
                }
                try insertNotification(item.notification, steps: item.steps, deliveries: rows, now: now)
                for r in rows where r.state == .suppressed { suppressed(r) }
                return rows.count
            }
        }
    }

    /// Upserts every device as ``upsertDevice(_:now:)`` does and returns one result per device, in
    /// input order: a device that fails fails alone and the others are stored. Throws only when the
    /// batch as a whole could not be stored; then none of it is.
    ///
    /// This default upserts each device in its own transaction. ``SQLiteStore`` overrides it with one
    /// transaction for the whole batch (a savepoint per device): group commit.
    public func upsertDevicesIndividually(_ devices: [Device], now: Date) throws -> [Result<UpsertResult, any Error>] {
        devices.map { device in Result { try upsertDevice(device, now: now) } }
    }
}
