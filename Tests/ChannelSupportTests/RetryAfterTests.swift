import ChannelAPI
import ChannelSupport
import Foundation
import Testing

/// Delays and numbers read from the network are clamped, never trapped on (issue 15 item 1).
@Suite struct RetryAfterTests {
    static let now = Date(timeIntervalSince1970: 1_445_412_480)  // Wed, 21 Oct 2015 07:28:00 GMT

    @Test func maximumIsOneDay() {
        #expect(RetryAfter.maximum == .seconds(86_400))
    }

    @Test(arguments: [
        ("99999999999999999", RetryAfter.maximum),  // the value
        ("99999999999999999999999999999", RetryAfter.maximum),  // does not fit Int64 either
        ("9223372036854775807", RetryAfter.maximum),
        ("86401", RetryAfter.maximum),
        ("86400", Duration.seconds(86_400)),
        ("120", Duration.seconds(120)),
        ("0", Duration.zero),
        ("  7 ", Duration.seconds(7)),
    ])
    func deltaSecondsAreClamped(_ value: String, _ expected: Duration) {
        #expect(RetryAfter.parse(value, now: Self.now) == expected)
    }

    @Test(arguments: ["-1", "-99999999999999999", "NaN", "nan", "inf", "1e300", "12.5", "+5", "soon", "", "0x10"])
    func garbageAndNegativeAreUnreadable(_ value: String) {
        #expect(RetryAfter.parse(value, now: Self.now) == nil)
    }

    @Test func httpDatesAreClampedBothWays() {
        #expect(RetryAfter.parse("Wed, 21 Oct 2015 07:28:30 GMT", now: Self.now) == .seconds(30))
        // Far future: one day, not a trap.
        #expect(RetryAfter.parse("Fri, 31 Dec 9999 23:59:59 GMT", now: Self.now) == RetryAfter.maximum)
        // In the past: now.
        #expect(RetryAfter.parse("Thu, 01 Jan 1970 00:00:00 GMT", now: Self.now) == .zero)
        // Against a clock far in the past the same date is still at most a day away.
        #expect(
            RetryAfter.parse("Wed, 21 Oct 2015 07:28:30 GMT", now: Date(timeIntervalSince1970: -1e15))
                == RetryAfter.maximum)
    }

    @Test func doubleAndIntSecondsAreClamped() {
        #expect(RetryAfter.seconds(Double.nan) == nil)
        #expect(RetryAfter.seconds(Double.infinity) == RetryAfter.maximum)
        #expect(RetryAfter.seconds(-Double.infinity) == .zero)
        #expect(RetryAfter.seconds(1e300) == RetryAfter.maximum)
        #expect(RetryAfter.seconds(-5.0) == .zero)
        #expect(RetryAfter.seconds(1.5) == .milliseconds(1500))
        #expect(RetryAfter.seconds(Int.max) == RetryAfter.maximum)
        #expect(RetryAfter.seconds(Int.min) == .zero)
        #expect(RetryAfter.until(.distantFuture, now: Self.now) == RetryAfter.maximum)
        #expect(RetryAfter.clamp(.seconds(Int64.max)) == RetryAfter.maximum)
        #expect(RetryAfter.clamp(.seconds(-3)) == .zero)
    }

    @Test func conversionsFromOutsideClampInsteadOfTrapping() {
        #expect(Int64(clamping: Double.nan) == 0)
        #expect(Int64(clamping: 1e300) == .max)
        #expect(Int64(clamping: -1e300) == .min)
        #expect(Int64(clamping: 0x1p63) == .max)
        #expect(Int64(clamping: -0x1p63) == .min)
        #expect(Int64(clamping: 12.9) == 12)
        #expect(Date(timeIntervalSince1970: 1e300).millisecondsSince1970 == .max)
        #expect(Date(timeIntervalSince1970: -1e300).secondsSince1970 == .min)
        #expect(Duration.seconds(Int64.max).milliseconds == .max)
        #expect(Duration.seconds(Int64.min).milliseconds == .min)
        #expect(Duration.seconds(2).milliseconds == 2000)
    }
}

/// The HTTP-date form of `Retry-After` (RFC 9110 §10.2.3): a recipient reads all three formats of
/// §5.6.7, here RFC 9110's own example date, 784111777 (1994-11-06 08:49:37 UTC), in each.
@Suite struct RetryAfterHTTPDateTests {
    static let now = Date(timeIntervalSince1970: 784_111_777 - 90)

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // obsolete RFC 850 format
        "Sun Nov  6 08:49:37 1994",  // ANSI C's asctime() format
    ])
    func theThreeFormsOfRFC9110(_ text: String) {
        #expect(RetryAfter.parse(text, now: Self.now) == .seconds(90))
        #expect(RetryAfter.parse(" \(text) ", now: Self.now) == .seconds(90))
    }

    @Test func aResponseHeaderIsReadTheSameWay() {
        let response = HTTPResponse(status: 503, headers: [HTTPHeader("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")])
        #expect(RetryAfter.parse(response, now: Self.now) == .seconds(90))
        #expect(RetryAfter.parse(HTTPResponse(status: 503), now: Self.now) == nil)
    }

    @Test(arguments: ["Sun, 99 Foo 1994 08:49:37 GMT", "tomorrow at noon", "Sun, 06 Nov"])
    func notADate(_ text: String) {
        #expect(RetryAfter.parse(text, now: Self.now) == nil)
    }
}
