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

    /// The most rows one record suppresses: past it the caller suppresses the rest in pages, so
    /// memory does not grow with a large fan-out's later channels.
    public static let limit = 1_000

    /// Creates a rule.
    public init(notificationId: String, step: Int, channels: Set<String>, reason: String) {
        self.notificationId = notificationId
        self.step = step
        self.channels = channels
        self.reason = reason
    }
}

extension HeraldStore {
    /// The default records the results only (``record(_:now:)``) and reports the suppression as not
    /// done (`complete` false), so the caller suppresses as it does for any other store write.
    /// ``SQLiteStore`` does both in one transaction.
    public func record(_ attempts: [AttemptRecord], now: Date, suppressing suppression: StepSuppression) throws
        -> (removed: [Device], suppressed: [DeliveryRecord], complete: Bool)
    {
        (try record(attempts, now: now), [], false)
    }
}
