import ChannelAPI
import ChannelSupport
import Foundation

/// What a push service's answer means for the subscription (the dead-subscription policy). Pure.
public enum WebPushResponse: Sendable, Equatable {
    /// 2xx (201 Created, 202 Accepted): the service took the message.
    case delivered
    /// 404/410: the subscription is expired or unsubscribed; remove the device.
    case dead(reason: String)
    /// 429 (with Retry-After) or 5xx: try again later.
    case retry(reason: String, after: Duration?)
    /// Anything else (400/401/403/413, …): permanent for this message, subscription kept.
    /// `isConfigProblem` marks VAPID or request-format problems worth an error log.
    case failed(reason: String, isConfigProblem: Bool)

    /// Classifies a status, body and `Retry-After` header.
    public static func classify(status: Int, body: [UInt8], retryAfter: String?, now: Date) -> WebPushResponse {
        let detail = describe(status: status, body: body)
        switch status {
        case 200..<300:
            return .delivered
        case 404, 410:
            return .dead(reason: detail)
        case 429, 500...599:
            return .retry(reason: detail, after: retryAfter.flatMap { RetryAfter.parse($0, now: now) })
        case 413:
            return .failed(reason: detail + " (message too large for the push service)", isConfigProblem: false)
        case 400, 401, 403:
            return .failed(reason: detail, isConfigProblem: true)
        default:
            return .failed(reason: detail, isConfigProblem: false)
        }
    }

    /// `push service answered <status>` plus what the body says: the Mozilla autopush fields
    /// (`code`, `errno`, `error`, `message`), Apple's `reason`, or the first 200 characters of text.
    public static func describe(status: Int, body: [UInt8]) -> String {
        var out = "push service answered \(status)"
        guard !body.isEmpty else { return out }
        if let o = (try? JSONValue.parse(body))?.objectValue {
            var parts: [String] = []
            if let errno = o["errno"]?.intValue { parts.append("errno \(errno)") }
            if let e = o["error"]?.stringValue, !e.isEmpty { parts.append(clean(e)) }
            if let m = o["message"]?.stringValue, !m.isEmpty { parts.append(clean(m)) }
            if let r = o["reason"]?.stringValue, !r.isEmpty { parts.append(clean(r)) }
            if !parts.isEmpty { return out + ": " + parts.joined(separator: ": ") }
        }
        let text = clean(String(decoding: body.prefix(200), as: UTF8.self))
        if !text.isEmpty { out += ": " + text }
        return out
    }

    static func clean(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
            .trimmingCharacters(in: .whitespaces)
    }
}
