import ChannelAPI
import ChannelSupport
import Foundation

/// An OAuth access token for FCM and when it stops being valid.
public struct FCMAccessToken: Sendable, Equatable {
    /// How long before ``expiresAt`` a token is no longer handed out (refreshed instead).
    public static let refreshMargin: Duration = .seconds(60)

    /// The bearer token. Secret: never log it.
    public let value: String
    /// When the token endpoint said it expires.
    public let expiresAt: Date

    /// Creates a token.
    public init(value: String, expiresAt: Date) {
        self.value = value
        self.expiresAt = expiresAt
    }

    /// Whether the token may still be used at `now`: until 60 s before it expires.
    public func isUsable(at now: Date) -> Bool {
        now < expiresAt.addingTimeInterval(-FCMAccessToken.refreshMargin.timeInterval)
    }

    /// The form kept in the channel state store: `{"accessToken":…,"expiresAt":<unix ms>}`.
    public var stateJSON: JSONValue {
        .object(["accessToken": .string(value), "expiresAt": .number(Double(expiresAt.millisecondsSince1970))])
    }

    /// Reads ``stateJSON``; nil for anything else.
    public init?(stateJSON: JSONValue) {
        guard let v = stateJSON["accessToken"]?.stringValue, !v.isEmpty,
            let ms = stateJSON["expiresAt"]?.numberValue, ms.isFinite
        else { return nil }
        self.init(value: v, expiresAt: Date(timeIntervalSince1970: ms / 1000))
    }
}

/// What the token endpoint's answer means. Pure: classifies status and body.
public enum FCMTokenResponse: Sendable, Equatable {
    /// A token to use.
    case token(FCMAccessToken)
    /// The credentials were refused (4xx): every delivery fails until the operator fixes them.
    case rejected(status: Int, reason: String)
    /// The endpoint is unavailable (5xx, or a 2xx without a usable token): try again later.
    case unavailable(status: Int?, reason: String, retryAfter: Duration?)

    /// Classifies an answer received at `now`.
    public static func classify(status: Int, body: [UInt8], retryAfter: String?, now: Date) -> FCMTokenResponse {
        let json = try? JSONValue.parse(body)
        switch status {
        case 200..<300:
            guard let token = json?["access_token"]?.stringValue, !token.isEmpty else {
                return .unavailable(
                    status: status, reason: "token endpoint answered \(status) without access_token", retryAfter: nil)
            }
            let seconds =
                json?["expires_in"]?.numberValue ?? json?["expires_in"]?.stringValue.flatMap(Double.init) ?? 3600
            guard seconds.isFinite, seconds > 0 else {
                return .unavailable(
                    status: status, reason: "token endpoint answered \(status) with expires_in \(seconds)",
                    retryAfter: nil)
            }
            return .token(FCMAccessToken(value: token, expiresAt: now.addingTimeInterval(min(seconds, 86_400))))
        case 400..<500 where status != 408 && status != 429:
            return .rejected(status: status, reason: "token endpoint answered \(status): \(oauthReason(json, body))")
        default:
            let after = retryAfter.flatMap { RetryAfter.parse($0, now: now) }
            return .unavailable(
                status: status, reason: "token endpoint answered \(status): \(oauthReason(json, body))",
                retryAfter: after)
        }
    }

    /// `error: error_description` from an OAuth error body, else the start of the raw body.
    static func oauthReason(_ json: JSONValue?, _ body: [UInt8]) -> String {
        if let e = json?["error"]?.stringValue {
            if let d = json?["error_description"]?.stringValue, !d.isEmpty { return "\(e): \(d)" }
            return e
        }
        if let m = json?["error"]?["message"]?.stringValue { return m }
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return text.isEmpty ? "(empty body)" : text
    }
}
