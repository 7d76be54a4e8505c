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

    /// Parses an RFC 3339 date-time (`2026-12-02T05:55:32Z`, `…T05:55:32.250+01:00`; `t`, `z` and a
    /// space for the `T` accepted, a UTC offset with or without its colon), or nil when `text` is not
    /// one. Pure code over the bytes: text from a provider never reaches ICU, whose
    /// `ISO8601DateFormatter` dies with a division by zero on a long fraction (found by
    /// `fuzz-relay-response`). Fraction digits past the ninth are read and ignored; a leap second
    /// (`:60`) counts as the last second of its minute.
    public static func date(parsing text: String) -> Date? {
        let b = Array(text.utf8)
        var i = 0
        func number(_ width: Int) -> Int64? {
            guard i + width <= b.count else { return nil }
            var v: Int64 = 0
            for k in i..<(i + width) {
                guard b[k] >= UInt8(ascii: "0"), b[k] <= UInt8(ascii: "9") else { return nil }
                v = v * 10 + Int64(b[k] - UInt8(ascii: "0"))
            }
            i += width
            return v
        }
        func expect(_ characters: String) -> Bool {
            guard i < b.count, characters.utf8.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour <= 23, minute <= 59,
            second <= 60
        else { return nil }
        var nanoseconds: Int64 = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") {
                if digits < 9 { nanoseconds = nanoseconds * 10 + Int64(b[i] - UInt8(ascii: "0")) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 9) { nanoseconds *= 10 }
        }
        var offset: Int64 = 0
        if !expect("Zz") {
            guard i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") else { return nil }
            let sign: Int64 = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let h = number(2) else { return nil }
            _ = expect(":")
            guard let m = number(2), h <= 23, m <= 59 else { return nil }
            offset = sign * (h * 3600 + m * 60)
        }
        guard i == b.count else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1e9)
    }

    /// Days in `month` of `year` (proleptic Gregorian).
    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysSince1970(year y0: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
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
