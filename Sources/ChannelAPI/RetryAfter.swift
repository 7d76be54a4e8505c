import Foundation
import HeraldHTTP

/// Reading a provider's "try again later" signal.
public enum RetryAfter {
    /// Parses an HTTP `Retry-After` value: delta seconds or an HTTP date (relative to `now`).
    public static func parse(_ value: String, now: Date) -> Duration? {
        let t = value.trimmingCharacters(in: .whitespaces)
        if let s = Int(t), s >= 0 { return .seconds(s) }
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            f.dateFormat = format
            if let d = f.date(from: t) {
                return .milliseconds(Int64(max(0, d.timeIntervalSince(now)) * 1000))
            }
        }
        return nil
    }
}

extension RetryAfter {
    /// The `Retry-After` header of `response`, relative to `now`; nil when absent or unreadable.
    public static func parse(_ response: HTTPResponse, now: Date) -> Duration? {
        response.header("retry-after").flatMap { parse($0, now: now) }
    }
}
