import ChannelAPI

/// What `GET /metrics` shows of local push: open streams, pushes by outcome and the time from a
/// push's write to its confirmation.
public struct LocalStreamStats: Sendable, Equatable {
    /// The upper bounds (seconds) of the confirm-latency histogram's buckets.
    public static let buckets: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Streams open now (`herald_local_streams`).
    public var streams = 0
    /// Pushes by outcome (`herald_local_deliveries_total{outcome}`).
    public var outcomes: [LocalPushOutcome: Int] = [:]
    /// Confirmations per bucket of ``buckets`` (not cumulative; the last slot is past the last bound).
    public var confirmBuckets = [Int](repeating: 0, count: LocalStreamStats.buckets.count + 1)
    /// The sum of the confirm latencies, in seconds.
    public var confirmSum = 0.0

    /// No streams, nothing counted.
    public init() {}

    mutating func count(_ outcome: LocalPushOutcome) { outcomes[outcome, default: 0] += 1 }

    mutating func observeConfirm(seconds: Double) {
        let i = LocalStreamStats.buckets.firstIndex { seconds <= $0 } ?? LocalStreamStats.buckets.count
        confirmBuckets[i] += 1
        confirmSum += seconds
    }
}
