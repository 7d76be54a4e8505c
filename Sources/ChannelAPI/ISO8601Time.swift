import Foundation

/// Internet date-time text in UTC to the second (`2026-12-02T05:55:32Z`), the same text as
/// Foundation's `date.formatted(.iso8601)`, computed from the Unix time without a format style.
///
/// Building the format style per call was about 3% of a drain worker's CPU (one log line per
/// delivery). Years outside 0001–9999 are left to Foundation.
public enum ISO8601Time {
    /// `date` as `yyyy-MM-ddTHH:mm:ssZ` in UTC, the fraction of its second dropped.
    public static func string(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (days, secondOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let day = secondOfDay < 0 ? days - 1 : days
        let second = secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay
        let (year, month, dayOfMonth) = civil(daysSince1970: day)
        guard (1...9999).contains(year) else { return date.formatted(.iso8601) }
        var out: [UInt8] = []
        out.reserveCapacity(20)
        func digits(_ value: Int64, _ width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            var v = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(v / divisor))
                v %= divisor
                divisor /= 10
            }
        }
        digits(year, 4)
        out.append(UInt8(ascii: "-"))
        digits(month, 2)
        out.append(UInt8(ascii: "-"))
        digits(dayOfMonth, 2)
        out.append(UInt8(ascii: "T"))
        digits(second / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(second / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(second % 60, 2)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`).
    static func civil(daysSince1970 z0: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
