import ChannelAPI
import Foundation
import Testing

/// ``ISO8601Time`` writes what Foundation's `.iso8601` format style writes, and reads RFC 3339 as
/// Foundation's `ISO8601DateFormatter` reads it.
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

    /// RFC 3339 forms and their instants; a fraction past nine digits is ignored, a leap second is
    /// the minute's last second.
    @Test func parsesRFC3339() {
        let cases: [(String, TimeInterval)] = [
            ("1970-01-01T00:00:00Z", 0), ("2026-12-02T05:55:32Z", 1_796_190_932),
            ("2026-12-02T05:55:32.75Z", 1_796_190_932.75), ("2026-12-02t05:55:32z", 1_796_190_932),
            ("2026-12-02 05:55:32Z", 1_796_190_932), ("2026-12-02T06:55:32+01:00", 1_796_190_932),
            ("2026-12-02T00:25:32-0530", 1_796_190_932), ("2000-02-29T00:00:00Z", 951_782_400),
            ("1900-01-01T00:00:00Z", -2_208_988_800), ("9999-12-31T23:59:59Z", 253_402_300_799),
            ("2016-12-31T23:59:60Z", 1_483_228_799),
            ("9999-12-31T23:59:59.0009999999999999999999999999999999999999999999999Z", 253_402_300_799.000_999_999),
        ]
        for (text, seconds) in cases {
            let parsed = ISO8601Time.date(parsing: text)?.timeIntervalSince1970
            #expect(parsed.map { abs($0 - seconds) < 1e-6 } == true, "\(text): \(String(describing: parsed))")
        }
    }

    @Test func refusesWhatIsNotADateTime() {
        for text in [
            "", "2026", "2026-12-02", "2026-12-02T05:55:32", "2026-12-02T05:55Z", "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-12-32T00:00:00Z", "2026-12-02T24:00:00Z",
            "2026-12-02T05:60:00Z", "2026-12-02T05:55:61Z", "2026-12-02T05:55:32.Z", "2026-12-02T05:55:32Zx",
            "2026-12-02T05:55:32+1:00", "2026-12-02T05:55:32+24:00", "+2026-12-02T05:55:32Z", "2026-12-02X05:55:32Z",
            "２０２６-12-02T05:55:32Z",
        ] {
            #expect(ISO8601Time.date(parsing: text) == nil, "\(text)")
        }
    }

    /// Foundation's `ISO8601DateFormatter` (an independent parser) reads the same instants from
    /// 2,000 random texts with milliseconds and UTC offsets.
    @Test func parsingAgreesWithFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for _ in 0..<2_000 {
            let millis = Int64.random(in: -2_208_988_800_000...4_102_444_800_000, using: &generator)
            let offsetMinutes = Int.random(in: -14 * 60...14 * 60, using: &generator) / 15 * 15
            formatter.timeZone = TimeZone(secondsFromGMT: offsetMinutes * 60)
            let text = formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
            let theirs = try #require(formatter.date(from: text), "\(text)")
            let ours = try #require(ISO8601Time.date(parsing: text), "\(text)")
            #expect(abs(ours.timeIntervalSince1970 - theirs.timeIntervalSince1970) < 1e-6, "\(text)")
        }
    }
}
