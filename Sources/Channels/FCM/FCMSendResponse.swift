import ChannelAPI
import ChannelSupport
import Foundation

/// The parts of an FCM error body that decide an outcome, read defensively from any JSON shape.
public struct FCMErrorBody: Sendable, Equatable {
    /// `error.status`, the canonical status name (`INVALID_ARGUMENT`, `NOT_FOUND`, …).
    public var status: String?
    /// `error.message`.
    public var message: String?
    /// `errorCode` of the `google.firebase.fcm.v1.FcmError` entry in `error.details`.
    public var errorCode: String?
    /// `field` of every `google.rpc.BadRequest` field violation in `error.details`.
    public var violatedFields: [String]

    /// The `@type` of FCM's own error detail.
    public static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    /// The `@type` of a bad-request detail.
    public static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    /// Parses a body; never fails (a body that is not JSON gives an empty value).
    public init(body: [UInt8]) {
        status = nil
        message = nil
        errorCode = nil
        violatedFields = []
        guard let json = try? JSONValue.parse(body), let error = json["error"] else { return }
        status = error["status"]?.stringValue
        message = error["message"]?.stringValue
        for detail in error["details"]?.arrayValue ?? [] {
            let type = detail["@type"]?.stringValue
            if type == FCMErrorBody.fcmErrorType, let code = detail["errorCode"]?.stringValue, errorCode == nil {
                errorCode = code
            }
            if type == FCMErrorBody.badRequestType {
                for v in detail["fieldViolations"]?.arrayValue ?? [] {
                    if let f = v["field"]?.stringValue { violatedFields.append(f) }
                }
            }
        }
    }

    /// Whether a field violation names the registration token (`message.token`).
    public var namesToken: Bool { violatedFields.contains { $0 == "message.token" || $0.hasPrefix("message.token.") } }
}

/// What one send answer means for the device: FCM's dead-token policy. Pure: no I/O.
public enum FCMSendVerdict: Sendable, Equatable {
    /// Accepted; the message `name` when returned.
    case delivered(messageName: String?)
    /// The token is gone (UNREGISTERED, SENDER_ID_MISMATCH, INVALID_ARGUMENT naming `message.token`).
    case dead(reason: String)
    /// Transient (QUOTA_EXCEEDED, UNAVAILABLE, INTERNAL, 5xx, 429): try later.
    case retry(reason: String, retryAfter: Duration?)
    /// Permanent for this message; the device is kept.
    case failed(reason: String)
    /// The access token was refused (401 without an FCM error code): refresh it and try once more.
    case unauthenticated(reason: String)

    /// The least delay for QUOTA_EXCEEDED when FCM sends no Retry-After (Google asks for ≥ 1 minute).
    public static let quotaBackoff: Duration = .seconds(60)

    /// Classifies a send answer received at `now`.
    public static func classify(status: Int, body: [UInt8], retryAfter: String?, now: Date) -> FCMSendVerdict {
        if (200..<300).contains(status) {
            let name = (try? JSONValue.parse(body))?["name"]?.stringValue
            return .delivered(messageName: name)
        }
        let e = FCMErrorBody(body: body)
        let reason = describe(status: status, e, body)
        let after = retryAfter.flatMap { RetryAfter.parse($0, now: now) }
        switch e.errorCode {
        case "UNREGISTERED", "SENDER_ID_MISMATCH":
            return .dead(reason: reason)
        case "QUOTA_EXCEEDED":
            return .retry(reason: reason, retryAfter: after ?? quotaBackoff)
        case "UNAVAILABLE", "INTERNAL":
            return .retry(reason: reason, retryAfter: after)
        case "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR":
            return .failed(reason: reason)
        case "INVALID_ARGUMENT":
            return e.namesToken ? .dead(reason: reason) : .failed(reason: reason)
        default:
            break
        }
        // No (or an unknown) FCM error code: decide by the canonical status, then the HTTP status.
        if e.status == "INVALID_ARGUMENT" || status == 400 {
            return e.namesToken ? .dead(reason: reason) : .failed(reason: reason)
        }
        if status == 401 && e.errorCode == nil { return .unauthenticated(reason: reason) }
        if status == 429 || e.status == "RESOURCE_EXHAUSTED" {
            return .retry(reason: reason, retryAfter: after ?? quotaBackoff)
        }
        if status == 408 || (500...599).contains(status) { return .retry(reason: reason, retryAfter: after) }
        return .failed(reason: reason)
    }

    /// `FCM answered 404 UNREGISTERED: Requested entity was not found.` — the provider's words kept verbatim;
    /// for a body that is not FCM's error JSON, its first 200 bytes.
    static func describe(status: Int, _ e: FCMErrorBody, _ body: [UInt8]) -> String {
        var head = "FCM answered \(status)"
        if let code = e.errorCode ?? e.status { head += " \(code)" }
        if let m = e.message, !m.isEmpty {
            head += ": \(m)"
        } else if e.errorCode == nil, e.status == nil {
            let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { head += ": \(text)" }
        }
        if !e.violatedFields.isEmpty { head += " (fields: \(e.violatedFields.joined(separator: ", ")))" }
        return head
    }
}
