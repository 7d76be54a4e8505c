import Foundation

/// Time as Herald sees it. Injected everywhere so retries, token refresh and rate limits are testable.
public protocol HeraldClock: Sendable {
    /// The current wall-clock time.
    func now() -> Date
    /// Suspends for `duration` (a test clock may return at once or when advanced).
    func sleep(for duration: Duration) async throws
}

/// The real clock.
public struct SystemClock: HeraldClock {
    /// Creates the system clock.
    public init() {}
    /// `Date()`.
    public func now() -> Date { Date() }
    /// `Task.sleep`.
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

extension Date {
    /// Milliseconds since 1970, clamped to `Int64` (a date from outside never traps the conversion).
    public var millisecondsSince1970: Int64 { Int64(clamping: (timeIntervalSince1970 * 1000).rounded(.down)) }
    /// Whole seconds since 1970, clamped to `Int64`.
    public var secondsSince1970: Int64 { Int64(clamping: timeIntervalSince1970.rounded(.down)) }
    /// This date plus `duration`.
    public func adding(_ duration: Duration) -> Date { addingTimeInterval(duration.timeInterval) }
}

extension Duration {
    /// The duration in seconds as a `TimeInterval`.
    public var timeInterval: TimeInterval {
        let (s, atto) = components
        return TimeInterval(s) + TimeInterval(atto) / 1e18
    }

    /// The duration in whole milliseconds, clamped to `Int64`.
    public var milliseconds: Int64 {
        let (s, atto) = components
        let (whole, overflow) = s.multipliedReportingOverflow(by: 1000)
        if overflow { return s < 0 ? .min : .max }
        let (total, overflow2) = whole.addingReportingOverflow(atto / 1_000_000_000_000_000)
        if overflow2 { return s < 0 ? .min : .max }
        return total
    }
}

extension Int64 {
    /// `value` rounded toward zero and clamped to `Int64.min...Int64.max`; NaN gives 0.
    ///
    /// `Int64(_: Double)` traps on NaN, infinities and values out of range: numbers that come from
    /// outside (provider answers, headers, stored JSON) go through this instead.
    public init(clamping value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= 0x1p63 {
            self = .max
        } else if value <= -0x1p63 {
            self = .min
        } else {
            self = Int64(value)
        }
    }
}
