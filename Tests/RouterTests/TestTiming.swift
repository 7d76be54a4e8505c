import Foundation

/// Wall-clock bounds in tests that assert "this ends in bounded time". Under a sanitizer everything
/// runs 5–20× slower, so `make test-tsan` and `make test-asan` set `HERALD_TEST_TIME_SCALE` and the
/// bounds stretch by that factor; in the normal suite it is 1.
enum TestTiming {
    /// The factor, from `HERALD_TEST_TIME_SCALE` (1 when unset or not a number ≥ 1).
    static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["HERALD_TEST_TIME_SCALE"], let value = Double(text),
            value >= 1
        else { return 1 }
        return value
    }()

    /// `bound` stretched by ``scale``.
    static func bound(_ bound: Duration) -> Duration { bound * scale }

    /// Whether the suite runs under a sanitizer (long trial counts are cut down then).
    static var underSanitizer: Bool { scale > 1 }
}
