import ChannelAPI
import Foundation

/// Exponential backoff with jitter, per channel (`retry: { attempts, initial, max }`).
///
/// A pure value: it turns "attempt N failed transiently at time T" into a decision, so it is
/// tested with an injected clock and random value.
public struct RetryPolicy: Sendable, Equatable {
    /// Total attempts including the first.
    public var maxAttempts: Int
    /// Delay before the second attempt (before jitter).
    public var initialDelay: Duration
    /// Cap on any computed delay.
    public var maxDelay: Duration

    /// 8 attempts, 5 s doubling to at most 10 min.
    public static let `default` = RetryPolicy(maxAttempts: 8, initialDelay: .seconds(5), maxDelay: .seconds(600))

    /// Creates a policy.
    public init(maxAttempts: Int, initialDelay: Duration, maxDelay: Duration) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// What to do after a transient failure.
    public enum Decision: Sendable, Equatable {
        /// Try again at this time.
        case retry(at: Date)
        /// Stop: record `failed` with this explanation.
        case giveUp(String)
    }

    /// The decision after attempt `attempt` (1-based) failed at `now`.
    ///
    /// - Parameters:
    ///   - retryAfter: the provider's requested delay, honoured exactly (it wins over backoff) up to
    ///     ``RetryAfter/maximum`` (one day); a longer one is cut to it.
    ///   - expiresAt: the notification's TTL deadline; no attempt is scheduled after it.
    ///   - jitter: a value in `0..<1`; the backoff delay is scaled into `[50%, 100%]` of its value.
    public func decide(attempt: Int, now: Date, retryAfter: Duration?, expiresAt: Date?, jitter: Double) -> Decision {
        guard attempt < maxAttempts else { return .giveUp("gave up after \(attempt) attempts") }
        let delay: Duration
        if let retryAfter, retryAfter > .zero {
            // A channel's delay comes from the network: never more than RetryAfter.maximum (one day).
            delay = RetryAfter.clamp(retryAfter)
        } else {
            delay = backoff(attempt: attempt, jitter: jitter)
        }
        let at = now.adding(delay)
        if let expiresAt, at > expiresAt { return .giveUp("ttl expired before the next attempt") }
        return .retry(at: at)
    }

    /// The jittered backoff delay after attempt `attempt` failed: `min(max, initial·2^(attempt-1))`
    /// scaled by `0.5 + jitter/2`.
    public func backoff(attempt: Int, jitter: Double) -> Duration {
        let base = initialDelay.timeInterval * pow(2, Double(max(0, attempt - 1)))
        let capped = min(base, maxDelay.timeInterval)
        let j = min(max(jitter, 0), 1)
        return .milliseconds(Int64(clamping: (capped * (0.5 + j / 2) * 1000).rounded()))
    }
}
