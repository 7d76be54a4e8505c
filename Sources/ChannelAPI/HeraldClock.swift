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
    /// Milliseconds since 1970.
    public var millisecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
    /// Whole seconds since 1970.
    public var secondsSince1970: Int64 { Int64(timeIntervalSince1970.rounded(.down)) }
    /// This date plus `duration`.
    public func adding(_ duration: Duration) -> Date { addingTimeInterval(duration.timeInterval) }
}

extension Duration {
    /// The duration in seconds as a `TimeInterval`.
    public var timeInterval: TimeInterval {
        let (s, atto) = components
        return TimeInterval(s) + TimeInterval(atto) / 1e18
    }

    /// The duration in whole milliseconds.
    public var milliseconds: Int64 {
        let (s, atto) = components
        return s * 1000 + atto / 1_000_000_000_000_000
    }
}
