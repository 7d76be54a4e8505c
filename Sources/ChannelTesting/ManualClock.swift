import ChannelAPI
import Foundation
import HeraldSync

/// A clock that moves only when told to. `sleep` advances the clock by the requested duration and
/// returns at once, so retry schedules and rate limits run instantly and exactly in tests; it also
/// keeps each duration asked for (``sleeps``), so a test can check a waiting schedule.
public final class ManualClock: HeraldClock {
    private let current: Locked<Date>
    private let slept = Locked<[Duration]>([])

    /// Every duration `sleep` was asked for, in order.
    public var sleeps: [Duration] { slept.withLock { $0 } }

    /// Starts at `start` (default 2026-01-01T00:00:00Z).
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600)) { current = Locked(start) }

    /// The current time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves time forward.
    public func advance(by duration: Duration) { current.withLock { $0 = $0.adding(duration) } }

    /// Sets the time.
    public func set(_ date: Date) { current.withLock { $0 = date } }

    /// Advances by `duration` and yields.
    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        slept.withLock { $0.append(duration) }
        advance(by: duration)
        await Task.yield()
    }
}

/// Randomness from a fixed repeating byte pattern (or a seed), for reproducible envelopes and jitter.
public struct FixedRandom: RandomSource {
    let pattern: [UInt8]

    /// Repeats `pattern` (default: 0x00, 0x01, …).
    public init(pattern: [UInt8] = Array(0...255)) { self.pattern = pattern.isEmpty ? [0] : pattern }

    /// The first `count` bytes of the repeated pattern.
    public func bytes(_ count: Int) -> [UInt8] { (0..<count).map { pattern[$0 % pattern.count] } }
}
