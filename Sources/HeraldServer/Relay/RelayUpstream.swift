import ChannelAPI

/// Answers shared by relay protocols for what the provider said, in the `{ok:false, code, error}`
/// shape (pure).
enum RelayUpstream {
    /// A `retry` result: 429 with `Retry-After` when the provider throttled, 502 when it could not be
    /// reached, 503 when it answered 5xx.
    static func transient(_ r: DeliveryResult) -> RelayResponse {
        let seconds = r.retryAfter.map { max(1, Int($0.components.seconds)) }
        var headers: [String: String] = [:]
        if let seconds { headers["Retry-After"] = String(seconds) }
        if r.status == 429 {
            headers["Retry-After"] = headers["Retry-After"] ?? "1"
            return RelayResponse(429, body("rate_limited", r.reason ?? "the provider throttled"), headers: headers)
        }
        if r.status == nil {
            return RelayResponse(
                502, body("upstream_unreachable", r.reason ?? "provider unreachable"), headers: headers)
        }
        return RelayResponse(503, body("upstream_unavailable", r.reason ?? "provider unavailable"), headers: headers)
    }

    /// A `failed` result: 413 for a payload the provider found too large, 502 for a rejection of the
    /// relay's own credentials or topic (403, or none: a local failure), else 400 with the reason.
    static func failed(_ r: DeliveryResult) -> RelayResponse {
        let reason = r.reason ?? "the provider refused the push"
        if r.status == 413 || reason.hasPrefix("PayloadTooLarge") {
            return RelayResponse(413, body("too_large", reason))
        }
        if r.status == nil || r.status == 403 { return RelayResponse(502, body("upstream_rejected", reason)) }
        return RelayResponse(400, body("rejected", reason))
    }

    /// 500: the relay's `channel:` names no channel that can send prepared pushes.
    static func misconfigured(_ channel: String) -> RelayResponse {
        RelayResponse(500, body("misconfigured", "the relay's channel \(channel) is not an apns channel"))
    }

    static func body(_ code: String, _ message: String) -> JSONValue {
        ["ok": false, "code": .string(code), "error": .string(message)]
    }
}

/// Hex digits (pure).
enum RelayHex {
    /// Whether `byte` is an ASCII hex digit.
    static func isDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }
}
