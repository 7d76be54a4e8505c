import ChannelAPI
import Foundation

/// What recording a `mode: first` step's results suppresses once one of them is `delivered`: the
/// step's pending deliveries on the channels after the one that delivered
/// (``HeraldStore/record(_:now:suppressing:)``).
public struct StepSuppression: Sendable, Equatable {
    /// The notification (its storage key).
    public var notificationId: String
    /// The step.
    public var step: Int
    /// The channels whose pending deliveries of the step are suppressed.
    public var channels: Set<String>
    /// The reason each suppressed delivery gets.
    public var reason: String

    /// Creates a rule.
    public init(notificationId: String, step: Int, channels: Set<String>, reason: String) {
        self.notificationId = notificationId
        self.step = step
        self.channels = channels
        self.reason = reason
    }
}

extension HeraldStore {
    /// Records the results as ``record(_:now:)`` does, then, when one of them is `delivered`, suppresses
    /// `suppression`'s pending deliveries as ``suppress(deliveryIds:reason:now:)`` does: two
    /// transactions. ``SQLiteStore`` overrides it with one; this default serves other stores.
    public func record(_ attempts: [AttemptRecord], now: Date, suppressing suppression: StepSuppression) throws
        -> (removed: [Device], suppressed: [DeliveryRecord])
    {
        let removed = try record(attempts, now: now)
        guard attempts.contains(where: { $0.state == .delivered }), !suppression.channels.isEmpty else {
            return (removed, [])
        }
        var pending: [DeliveryRecord] = []
        try forEachDelivery(notificationId: suppression.notificationId) { r in
            if r.step == suppression.step, r.state == .pending, suppression.channels.contains(r.channel) {
                pending.append(r)
            }
        }
        guard !pending.isEmpty else { return (removed, []) }
        try suppress(deliveryIds: pending.map(\.id), reason: suppression.reason, now: now)
        return (
            removed,
            pending.map { r in
                var r = r
                r.state = .suppressed
                r.reason = suppression.reason
                r.updatedAt = now
                return r
            }
        )
    }
}
