import ChannelAPI
import Foundation
internal import HeraldHTTP

/// Reading a provider's "try again later" signal: the parsers of ChannelAPI's ``RetryAfter``.
///
/// Every result is clamped to `0...`\(``RetryAfter/maximum``) (one day, a contract rule kept in
/// ChannelAPI).
extension RetryAfter {
    /// Parses an HTTP `Retry-After` value: delta seconds or an HTTP date (relative to `now`).
    ///
    /// The result is clamped to `0...`\(``maximum``): a huge number of seconds (even one that does
    /// not fit an integer) or a far-future date gives ``maximum``, a past date gives zero.
    /// - Returns: The delay, or nil when the value is neither form (garbage, a negative number).
    public static func parse(_ value: String, now: Date) -> Duration? {
        let t = value.trimmingCharacters(in: .whitespaces)
        if !t.isEmpty, t.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // delay-seconds = 1*DIGIT (RFC 9110 §10.2.3); too many digits for an Int is simply "very long".
            guard let s = Int(t) else { return maximum }
            return seconds(s)
        }
        // An HTTP-date, read by libcurl's `curl_getdate` (HeraldHTTP's `HTTPDate`).
        guard let seconds = HTTPDate.secondsSince1970(t) else { return nil }
        return until(Date(timeIntervalSince1970: Double(seconds)), now: now)
    }

    /// `seconds` as a delay, clamped to `0...`\(``maximum``).
    public static func seconds(_ seconds: Int) -> Duration {
        .seconds(min(max(0, seconds), 86_400))
    }

    /// `seconds` (possibly fractional, negative, infinite or NaN) as a delay, clamped to
    /// `0...`\(``maximum``); nil for NaN.
    public static func seconds(_ seconds: Double) -> Duration? {
        guard !seconds.isNaN else { return nil }
        let clamped = min(max(0, seconds), 86_400)
        return .milliseconds(Int64((clamped * 1000).rounded(.up)))
    }

    /// The delay from `now` until `date`, clamped to `0...`\(``maximum``).
    public static func until(_ date: Date, now: Date) -> Duration {
        seconds(date.timeIntervalSince(now)) ?? .zero
    }
}

extension RetryAfter {
    /// The `Retry-After` header of `response`, relative to `now`; nil when absent or unreadable.
    public static func parse(_ response: HTTPResponse, now: Date) -> Duration? {
        response.header("retry-after").flatMap { parse($0, now: now) }
    }
}
