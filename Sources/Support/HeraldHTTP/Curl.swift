import CCurl
import CHeraldShims
import ChannelAPI

/// Internal helpers around libcurl that hold no state.
enum Curl {
    /// The result of the process-wide `curl_global_init`, run exactly once (Swift globals initialise lazily
    /// and thread-safely).
    static let globalInitResult: Int = Int(curl_global_init(Int(CURL_GLOBAL_SSL) | Int(CURL_GLOBAL_WIN32)).rawValue)

    /// Milliseconds for a `long` timeout option, clamped to `1...Int32.max` (0 would mean "no timeout").
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 1 }
        let limit = Int(Int32.max)
        let (whole, overflow) = Int(seconds).multipliedReportingOverflow(by: 1000)
        if overflow || whole >= limit { return limit }
        let fraction = Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        return max(1, min(limit, whole + fraction))
    }

    /// Maps a failed transfer's `CURLcode` to an ``HTTPError``.
    static func error(for code: CURLcode, message: String, tooLarge: Bool) -> HTTPError {
        let raw = Int(code.rawValue)
        let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return HTTPError(.responseTooLarge, "response body exceeds the allowed size", curlCode: raw)
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return HTTPError(.timeout, text, curlCode: raw)
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPError(.connectFailed, text, curlCode: raw)
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED:
            return HTTPError(.tls, text, curlCode: raw)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return HTTPError(.invalidRequest, text, curlCode: raw)
        default:
            return HTTPError(.transport, text, curlCode: raw)
        }
    }

    /// Whether `byte` may appear in an HTTP token (RFC 9110 `tchar`): letters, digits and
    /// ``!#$%&'*+-.^_`|~``, as two 64-bit masks over the ASCII range.
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        if byte < 64 { return (0x03FF_6CFA_0000_0000 as UInt64) >> byte & 1 != 0 }
        if byte < 128 { return (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (byte &- 64) & 1 != 0 }
        return false
    }

    /// Whether every UTF-8 byte of `text` satisfies `accept` (scanning contiguous storage when it can).
    @inline(__always)
    static func allBytes(_ text: String, _ accept: (UInt8) -> Bool) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable({ bytes in
            for byte in bytes where !accept(byte) { return false }
            return true
        }) {
            return result
        }
        return text.utf8.allSatisfy(accept)
    }

    /// Checks a request before it reaches libcurl, so that malformed input never becomes a header injection.
    static func validate(_ request: HTTPRequest) throws(HTTPError) {
        if request.method.isEmpty || !allBytes(request.method, isTokenByte) {
            throw HTTPError(.invalidRequest, "invalid HTTP method \"\(request.method)\"")
        }
        if request.url.isEmpty || !allBytes(request.url, { $0 > 0x20 && $0 != 0x7F }) {
            throw HTTPError(.invalidRequest, "invalid URL \"\(request.url)\"")
        }
        let scheme = request.url.utf8.prefix(8).map { $0 | 0x20 }  // ASCII lowercase; enough for a prefix test
        if !scheme.starts(with: "https://".utf8) && !scheme.starts(with: "http://".utf8) {
            throw HTTPError(.invalidRequest, "only http and https URLs are supported: \"\(request.url)\"")
        }
        for header in request.headers {
            if header.name.isEmpty || !allBytes(header.name, isTokenByte) {
                throw HTTPError(.invalidRequest, "invalid header name \"\(header.name)\"")
            }
            if !allBytes(header.value, { $0 != 0x0D && $0 != 0x0A && $0 != 0 }) {
                throw HTTPError(.invalidRequest, "header \(header.name) has a value with CR, LF or NUL")
            }
        }
        if let limit = request.maxResponseBytes, limit < 0 {
            throw HTTPError(.invalidRequest, "maxResponseBytes must not be negative")
        }
    }
}
