import HeraldSync

/// A token bucket per key: `burst` requests at once, refilled at `perSecond`. Time comes from the
/// caller (seconds on any monotonic scale), so it is testable.
public final class RateLimiter: Sendable {
    /// One key's bucket: the tokens left at time `at`.
    struct Bucket: Equatable {
        var tokens: Double
        var at: Double

        /// Refills to `now` and takes one token: nil when allowed, else the whole seconds to wait
        /// (at least 1). Pure, so a bucket kept in the store (``StoredRateLimit``) runs the same rule.
        mutating func take(now: Double, perSecond: Double, burst: Double) -> Int? {
            tokens = min(burst, tokens + max(0, now - at) * perSecond)
            at = max(at, now)
            if tokens >= 1 {
                tokens -= 1
                return nil
            }
            let wait = (1 - tokens) / perSecond
            return max(1, Int(min(86_400, wait.rounded(.up))))
        }
    }

    let perSecond: Double
    let burst: Double
    private let buckets = Locked<[String: Bucket]>([:])

    /// Creates a limiter.
    public init(perSecond: Double, burst: Int) {
        self.perSecond = max(perSecond, 1e-6)
        self.burst = Double(max(1, burst))
    }

    /// Takes one request from `key`'s bucket at time `now`: nil when allowed, else the whole seconds
    /// to wait (at least 1) for the `Retry-After` header.
    public func take(_ key: String, now: Double) -> Int? {
        buckets.withLock { all in
            var b = all[key] ?? Bucket(tokens: burst, at: now)
            defer { all[key] = b }
            return b.take(now: now, perSecond: perSecond, burst: burst)
        }
    }
}
