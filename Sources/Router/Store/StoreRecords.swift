import ChannelAPI
import Foundation
import HeraldSync

/// The state of one planned delivery in the outbox.
public enum DeliveryState: String, Sendable, CaseIterable {
    /// Persisted, not yet attempted (or its attempt's result was never recorded).
    case pending
    /// Failed transiently; due again at `nextAttemptAt`.
    case retry
    /// Accepted by the provider.
    case delivered
    /// The provider said the device is gone; the device was removed.
    case dead
    /// Permanent failure for this message.
    case failed
    /// Skipped by a route rule.
    case suppressed

    /// Whether no further attempt will be made.
    public var isFinal: Bool { self != .pending && self != .retry }
}

/// One row of the outbox: a delivery of one notification through one channel to one device
/// (or to a sink).
public struct DeliveryRecord: Sendable, Equatable {
    /// Stable id; the idempotency key handed to the channel.
    public var id: String
    /// The notification.
    public var notificationId: String
    /// Route step index.
    public var step: Int
    /// Channel position within the step (for `mode: first`).
    public var position: Int
    /// Channel name.
    public var channel: String
    /// Device id; nil for sinks.
    public var deviceId: String?
    /// Device platform; nil for sinks.
    public var platform: String?
    /// Current state.
    public var state: DeliveryState
    /// Attempts made so far.
    public var attempts: Int
    /// When a `retry` is due.
    public var nextAttemptAt: Date?
    /// Last provider status.
    public var status: Int?
    /// Last reason.
    public var reason: String?
    /// Provider message id.
    public var providerMessageId: String?
    /// Last change.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        id: String, notificationId: String, step: Int, position: Int, channel: String, deviceId: String?,
        platform: String?, state: DeliveryState, attempts: Int = 0, nextAttemptAt: Date? = nil, status: Int? = nil,
        reason: String? = nil, providerMessageId: String? = nil, updatedAt: Date
    ) {
        self.id = id
        self.notificationId = notificationId
        self.step = step
        self.position = position
        self.channel = channel
        self.deviceId = deviceId
        self.platform = platform
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.status = status
        self.reason = reason
        self.providerMessageId = providerMessageId
        self.updatedAt = updatedAt
    }

    /// The row as recording `attempt` at `now` leaves it (what a `delivery` event reports).
    func applying(_ attempt: AttemptRecord, at now: Date) -> DeliveryRecord {
        var r = self
        r.state = attempt.state
        r.attempts = attempt.attempt
        r.status = attempt.status
        r.reason = attempt.reason
        r.nextAttemptAt = attempt.nextAttemptAt
        r.providerMessageId = attempt.providerMessageId ?? providerMessageId
        r.updatedAt = now
        return r
    }

    /// The delivery-report JSON of contract §5.
    public var reportJSON: JSONValue {
        var o: [String: JSONValue] = [
            "id": .string(id), "channel": .string(channel), "outcome": .string(state.reportOutcome),
            "attempt": .number(Double(attempts)), "step": .number(Double(step)),
        ]
        if let deviceId { o["deviceId"] = .string(deviceId) }
        if let platform { o["platform"] = .string(platform) }
        if let status { o["status"] = .number(Double(status)) }
        if let reason { o["reason"] = .string(reason) }
        if let providerMessageId { o["providerMessageId"] = .string(providerMessageId) }
        if state == .retry, let n = nextAttemptAt {
            o["nextAttemptAt"] = .string(ISO8601Time.string(n))
        }
        return .object(o)
    }

    /// ``reportJSON``'s canonical bytes (keys sorted), written directly: what `herald send --format
    /// json` prints for each delivery of a large fan-out, without a ``JSONValue`` tree per line.
    public func writeReportJSON(into buffer: inout [UInt8]) {
        var o = JSONObjectWriter()
        o.add("attempt", attempts)
        o.add("channel", channel)
        o.add("deviceId", deviceId)
        o.add("id", id)
        if state == .retry, let n = nextAttemptAt { o.add("nextAttemptAt", ISO8601Time.string(n)) }
        o.add("outcome", state.reportOutcome)
        o.add("platform", platform)
        o.add("providerMessageId", providerMessageId)
        o.add("reason", reason)
        o.add("status", status)
        o.add("step", step)
        o.write(into: &buffer)
    }
}

extension DeliveryState {
    /// The contract's outcome word (`pending` is reported as `retry`: queued for an attempt).
    public var reportOutcome: String { self == .pending ? "retry" : rawValue }
}

/// The result of one attempt, applied to the outbox by ``HeraldStore/record(_:now:)``.
public struct AttemptRecord: Sendable {
    /// The delivery.
    public var deliveryId: String
    /// The attempt number (1-based).
    public var attempt: Int
    /// The new state.
    public var state: DeliveryState
    /// When it is due again (for `retry`).
    public var nextAttemptAt: Date?
    /// Provider status.
    public var status: Int?
    /// Reason.
    public var reason: String?
    /// Provider message id.
    public var providerMessageId: String?
    /// Extra facts.
    public var details: [String: String]
    /// For `dead`: the device to remove, and the address the attempt used (a device that has
    /// re-registered with a new token since then is kept).
    public var removeDevice: (namespace: String, deviceId: String, platform: String, address: String?)?

    /// Creates an attempt record.
    public init(
        deliveryId: String, attempt: Int, state: DeliveryState, nextAttemptAt: Date? = nil, status: Int? = nil,
        reason: String? = nil, providerMessageId: String? = nil, details: [String: String] = [:],
        removeDevice: (namespace: String, deviceId: String, platform: String, address: String?)? = nil
    ) {
        self.deliveryId = deliveryId
        self.attempt = attempt
        self.state = state
        self.nextAttemptAt = nextAttemptAt
        self.status = status
        self.reason = reason
        self.providerMessageId = providerMessageId
        self.details = details
        self.removeDevice = removeDevice
    }
}

/// A lifecycle event recorded against a notification (Home Assistant unification proposal): a
/// ``ChannelEvent`` with its row id and when it was recorded. The event's fields read as its own
/// (`recorded.kind`, `recorded.actionId`).
@dynamicMemberLookup
public struct LifecycleEvent: Sendable, Equatable {
    /// Row id (0 before the store assigns it).
    public var id: Int64 = 0
    /// The event: notification, kind (received | tapped | dismissed | action), action and device.
    public var event: ChannelEvent
    /// When.
    public var at: Date

    /// A field of ``event``.
    public subscript<T>(dynamicMember keyPath: WritableKeyPath<ChannelEvent, T>) -> T {
        get { event[keyPath: keyPath] }
        set { event[keyPath: keyPath] = newValue }
    }

    /// JSON for history output.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "kind": .string(event.kind.rawValue), "at": .string(ISO8601Time.string(at)),
        ]
        if let actionId = event.actionId { o["actionId"] = .string(actionId) }
        if !event.actionData.isEmpty { o["actionData"] = .object(event.actionData.mapValues { .string($0) }) }
        if let deviceId = event.deviceId { o["deviceId"] = .string(deviceId) }
        return .object(o)
    }
}

/// A stored notification with its deliveries and events.
public struct HistoryEntry: Sendable {
    /// The notification.
    public var notification: HeraldNotification
    /// When it was accepted.
    public var createdAt: Date
    /// Its deliveries.
    public var deliveries: [DeliveryRecord]
    /// Its lifecycle events.
    public var events: [LifecycleEvent]

    /// JSON for `herald history --format json`.
    public var json: JSONValue {
        var o: [String: JSONValue] = [:]
        o["id"] = .string(NotificationKey.publicID(of: notification.id))
        o["namespace"] = .string(notification.namespace)
        o["type"] = .string(notification.type)
        o["title"] = notification.title.map { .string($0) } ?? .null
        o["createdAt"] = .string(ISO8601Time.string(createdAt))
        o["deliveries"] = .array(deliveries.map(\.reportJSON))
        o["events"] = .array(events.map(\.json))
        return .object(o)
    }
}

/// What an upsert did.
public struct UpsertResult: Sendable, Equatable {
    /// True when the device was new.
    public var created: Bool
    /// Other registrations that held the same token/address and were removed (moved).
    public var moved: [String]
}

/// The run-time rules of one planned step, stored with the notification so that a resumed
/// delivery (after a crash or a reload) follows the plan it was made under.
public struct StepRule: Sendable, Equatable {
    /// `all` or `first`.
    public var mode: RouteStep.Mode
    /// The step's `unless-delivered`, if any.
    public var unlessDelivered: RouteStep.UnlessDelivered?
    /// The step's time budget.
    public var timeout: Duration?

    /// Creates a rule.
    public init(mode: RouteStep.Mode, unlessDelivered: RouteStep.UnlessDelivered?, timeout: Duration?) {
        self.mode = mode
        self.unlessDelivered = unlessDelivered
        self.timeout = timeout
    }

    var json: JSONValue {
        var o: [String: JSONValue] = ["mode": .string(mode.rawValue)]
        if let u = unlessDelivered { o["unlessDelivered"] = u.json }
        if let t = timeout { o["timeoutMs"] = .number(Double(t.milliseconds)) }
        return .object(o)
    }

    /// The text of a `steps` column: the rules as a canonical JSON array (read back by
    /// ``list(parsing:)``).
    static func storedText(_ rules: [StepRule]) -> String {
        JSONValue.array(rules.map(\.json)).canonicalString
    }

    /// The rules of a stored `steps` column (a JSON array), or nil when it is not one. Parsed texts
    /// are remembered (a route table has a few distinct ones), so a drain batch does not parse the
    /// same text once per notification.
    static func list(parsing text: String) -> [StepRule]? {
        if let known = parsedLists.withLock({ $0[text] }) { return known }
        guard let array = try? JSONValue.parse(text).arrayValue else { return nil }
        let rules = array.compactMap(StepRule.init(json:))
        parsedLists.withLock { lists in
            if lists.count >= 64 { lists.removeAll() }
            lists[text] = rules
        }
        return rules
    }

    private static let parsedLists = Locked<[String: [StepRule]]>([:])

    init?(json: JSONValue) {
        guard let m = json["mode"]?.stringValue, let mode = RouteStep.Mode(rawValue: m) else { return nil }
        self.mode = mode
        switch json["unlessDelivered"] {
        case .string("any"): unlessDelivered = .any
        case .array(let a): unlessDelivered = .channels(a.compactMap(\.stringValue))
        default: unlessDelivered = nil
        }
        timeout = json["timeoutMs"]?.intValue.map { .milliseconds($0) }
    }
}

/// A notification as stored.
public struct StoredNotification: Sendable {
    /// The notification.
    public var notification: HeraldNotification
    /// When it was accepted.
    public var createdAt: Date
    /// The step rules it was planned with, by step index.
    public var steps: [StepRule]
    /// Until when its pending rows are leased to the sender that just stored them (born leased);
    /// nil when read back from the store.
    public var leasedUntil: Date? = nil
}

/// One entry of the store's event log (what `GET /v1/events` streams).
public struct EventLogEntry: Sendable, Equatable {
    /// Store-wide increasing sequence number (the SSE `id:`).
    public var sequence: Int64
    /// The notification's namespace.
    public var namespace: String
    /// `notification`, `delivery`, or a lifecycle kind (`received`, `tapped`, `dismissed`, `action`).
    public var kind: String
    /// The notification it belongs to.
    public var notificationId: String
    /// The SSE `data:` object (http-api.md §4): for `delivery` `notificationId`, `channel`,
    /// `deviceId` (absent for sinks), `outcome`, `attempt`, and `reason` when there is one; for a
    /// lifecycle kind `notificationId`, `kind`, `action`, `deviceId`, `data` as recorded; for
    /// `notification` `notificationId`, `namespace`, `planned` (the delivery count).
    public var data: JSONValue
    /// When it was written.
    public var createdAt: Date

    /// Creates an entry.
    public init(
        sequence: Int64, namespace: String, kind: String, notificationId: String, data: JSONValue, createdAt: Date
    ) {
        self.sequence = sequence
        self.namespace = namespace
        self.kind = kind
        self.notificationId = notificationId
        self.data = data
        self.createdAt = createdAt
    }
}
