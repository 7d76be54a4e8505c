import ChannelAPI
import Foundation
import Testing

/// ``ISO8601Time`` writes what Foundation's `.iso8601` format style writes.
@Suite struct ISO8601TimeTests {
    /// Fixed points: the epoch, a second before it, leap days, century rules, the fraction dropped.
    @Test func knownInstants() {
        let cases: [(TimeInterval, String)] = [
            (0, "1970-01-01T00:00:00Z"), (-0.5, "1969-12-31T23:59:59Z"), (-1, "1969-12-31T23:59:59Z"),
            (951_782_400, "2000-02-29T00:00:00Z"), (4_107_542_399.999, "2100-02-28T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"), (1_796_190_932.75, "2026-12-02T05:55:32Z"),
            (-2_208_988_800, "1900-01-01T00:00:00Z"), (253_402_300_799, "9999-12-31T23:59:59Z"),
        ]
        for (seconds, text) in cases {
            #expect(ISO8601Time.string(Date(timeIntervalSince1970: seconds)) == text, "\(seconds)")
        }
    }

    /// Foundation, an independent implementation, agrees at 20,000 instants from 1600 to 2400.
    @Test func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let seconds =
                TimeInterval(Int64.random(in: -11_676_096_000...13_569_465_600, using: &generator))
                + Double.random(in: 0..<1, using: &generator)
            let date = Date(timeIntervalSince1970: seconds)
            #expect(ISO8601Time.string(date) == date.formatted(.iso8601), "\(seconds)")
        }
    }
}
