import ChannelAPI
import Foundation

/// One group of outbox rows a plan creates for one (step, channel): a single row for a sink, or one
/// row per registered device of the notification's namespace whose platform the channel serves.
///
/// The store expands groups into rows inside the insert's transaction
/// (``HeraldStore/insertNotification(_:steps:groups:now:suppressed:)``), reading the devices page by
/// page, so persisting a 100,000-device fan-out never holds its deliveries in memory.
public struct OutboxGroup: Sendable, Equatable {
    /// The step index.
    public var step: Int
    /// The channel's position in the step.
    public var position: Int
    /// The channel name.
    public var channel: String
    /// The platforms whose devices get a row; nil for a sink (one row with no device).
    public var platforms: Set<String>?
    /// `pending`, or `suppressed` for a step suppressed at plan time.
    public var state: DeliveryState
    /// Why the rows are suppressed, if they are.
    public var reason: String?

    /// Creates a group.
    public init(
        step: Int, position: Int, channel: String, platforms: Set<String>?, state: DeliveryState, reason: String?
    ) {
        self.step = step
        self.position = position
        self.channel = channel
        self.platforms = platforms
        self.state = state
        self.reason = reason
    }

    /// How many rows `groups` make given the namespace's device count per platform.
    public static func rowCount(_ groups: [OutboxGroup], platformCounts: [String: Int]) -> Int {
        groups.reduce(0) { total, g in
            guard let platforms = g.platforms else { return total + 1 }
            return total + platforms.reduce(0) { $0 + (platformCounts[$1] ?? 0) }
        }
    }

    /// Every row of `groups` for `devices` (keys in device order), in group order, with time-ordered
    /// ids from the system source (unique even when tests inject a fixed random source).
    public static func expand(
        _ groups: [OutboxGroup], notificationId: String, devices: [(deviceId: String, platform: String)], now: Date
    ) -> [DeliveryRecord] {
        var counts: [String: Int] = [:]
        for d in devices { counts[d.platform, default: 0] += 1 }
        var ids = UUIDGenerator.makeTimeOrdered(
            rowCount(groups, platformCounts: counts), at: now.millisecondsSince1970, random: SystemRandom()
        ).makeIterator()
        var rows: [DeliveryRecord] = []
        for g in groups {
            rows += g.rows(notificationId: notificationId, devices: devices, now: now) {
                ids.next() ?? UUIDGenerator.make(random: SystemRandom())
            }
        }
        return rows
    }

    /// The rows of this group for `devices` (keys in device order; those of other platforms are
    /// skipped), each with an id from `id` (time-ordered UUIDs).
    public func rows(
        notificationId: String, devices: [(deviceId: String, platform: String)], now: Date, id: () -> String
    ) -> [DeliveryRecord] {
        var out: [DeliveryRecord] = []
        guard let platforms else {
            return [
                DeliveryRecord(
                    id: id(), notificationId: notificationId, step: step, position: position, channel: channel,
                    deviceId: nil, platform: nil, state: state, reason: reason, updatedAt: now)
            ]
        }
        out.reserveCapacity(devices.count)
        for d in devices where platforms.contains(d.platform) {
            out.append(
                DeliveryRecord(
                    id: id(), notificationId: notificationId, step: step, position: position, channel: channel,
                    deviceId: d.deviceId, platform: d.platform, state: state, reason: reason, updatedAt: now))
        }
        return out
    }
}

/// The lease a notification's pending rows are born with when the process that stores them attempts
/// them at once (``Router/send(_:)``): nothing else claims them before that sender does (a worker of
/// the same process, another host's worker), and if the sender dies they become claimable when the
/// lease runs out, as any claim's would.
public struct OutboxLease: Sendable, Equatable {
    /// The lease owner (``LeaseOwner``'s id of the sending process).
    public var owner: String
    /// When the lease runs out unless the sender claims (and so renews) the rows first.
    public var until: Date
}

/// How many deliveries of one (step, channel) of a notification are in one state: what the executor
/// decides on between steps, without loading every delivery.
public struct DeliveryTally: Sendable, Equatable {
    /// The step index.
    public var step: Int
    /// The channel's position in the step (the lowest of its rows).
    public var position: Int
    /// The channel name.
    public var channel: String
    /// The state counted.
    public var state: DeliveryState
    /// How many deliveries are in it.
    public var count: Int

    /// Creates a tally.
    public init(step: Int, position: Int, channel: String, state: DeliveryState, count: Int) {
        self.step = step
        self.position = position
        self.channel = channel
        self.state = state
        self.count = count
    }

    /// Tallies of `records` (pure; the default for stores without a grouped query).
    public static func of(_ records: [DeliveryRecord]) -> [DeliveryTally] {
        struct Key: Hashable {
            let step: Int
            let channel: String
            let state: DeliveryState
        }
        var tallies: [Key: DeliveryTally] = [:]
        for r in records {
            let k = Key(step: r.step, channel: r.channel, state: r.state)
            if var t = tallies[k] {
                t.count += 1
                t.position = min(t.position, r.position)
                tallies[k] = t
            } else {
                tallies[k] = DeliveryTally(
                    step: r.step, position: r.position, channel: r.channel, state: r.state, count: 1)
            }
        }
        return tallies.values.sorted { ($0.step, $0.position, $0.channel) < ($1.step, $1.position, $1.channel) }
    }
}

/// One page of claimed deliveries (``HeraldStore/claimPending(notificationId:step:channel:owner:until:now:after:limit:)``).
public struct ClaimPage: Sendable {
    /// The deliveries claimed.
    public var records: [DeliveryRecord]
    /// Where the next page starts; nil when no more pending deliveries follow.
    public var next: Int64?

    /// Creates a page.
    public init(records: [DeliveryRecord], next: Int64?) {
        self.records = records
        self.next = next
    }
}
