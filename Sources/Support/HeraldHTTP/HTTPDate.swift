import CCurl

/// HTTP dates (RFC 9110 §5.6.7), read with libcurl's `curl_getdate`.
///
/// Accepts the three forms a recipient must read: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the
/// obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
/// libcurl is lenient beyond them (it also reads, say, a date without a weekday); anything it cannot
/// read gives nil.
public enum HTTPDate {
    /// The date in `text` as seconds since 1970-01-01 00:00:00 UTC, or nil when `text` is not a date.
    public static func secondsSince1970(_ text: String) -> Int64? {
        let seconds = curl_getdate(text, nil)
        // -1 is libcurl's "not a date" (it is also 1969-12-31 23:59:59, which no server sends).
        return seconds == -1 ? nil : Int64(seconds)
    }
}
