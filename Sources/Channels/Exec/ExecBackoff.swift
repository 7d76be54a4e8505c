import Foundation

/// When a dead or failing plugin may be started again: exponential backoff from ``base`` to
/// ``maximum``, decided on the injected clock's time. Pure.
struct ExecBackoff: Sendable, Equatable {
    /// The wait after the first failure.
    var base: Duration = .seconds(1)
    /// The longest wait.
    var maximum: Duration = .seconds(60)
    /// Failures since the plugin last answered a request.
    private(set) var failures = 0
    /// No start before this time; nil when a start may happen now.
    private(set) var notBefore: Date?

    /// The wait after `failures` failures in a row (1 → ``base``, doubling up to ``maximum``).
    func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        var d = base
        for _ in 1..<min(failures, 32) where d < maximum { d *= 2 }
        return min(d, maximum)
    }

    /// Notes a failure (a start that failed, a plugin that died) at `now`.
    mutating func failed(at now: Date) {
        failures += 1
        notBefore = now.adding(delay(afterFailures: failures))
    }

    /// Notes that the plugin answered: the next failure waits ``base`` again.
    mutating func succeeded() {
        failures = 0
        notBefore = nil
    }

    /// How long to wait before a start at `now`; nil when it may start now.
    func wait(at now: Date) -> Duration? {
        guard let notBefore, now < notBefore else { return nil }
        return .milliseconds(Int64(clamping: (notBefore.timeIntervalSince(now) * 1000).rounded(.up)))
    }
}
