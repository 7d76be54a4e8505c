import ChannelAPI
import ChannelSupport
import Foundation

/// A Bot API answer: `{"ok": true, "result": …}` or
/// `{"ok": false, "error_code": N, "description": "…", "parameters": {…}}`.
public struct TelegramResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// `ok`; false when the body was not a Bot API envelope.
    public var ok: Bool
    /// `result` on success.
    public var result: JSONValue?
    /// `error_code` (falls back to the HTTP status).
    public var errorCode: Int
    /// `description`, verbatim.
    public var description: String?
    /// `parameters.retry_after` in seconds.
    public var retryAfter: Int?
    /// `parameters.migrate_to_chat_id`.
    public var migrateToChatId: Int64?

    /// Parses a response body. A body that is not a Bot API envelope keeps the HTTP status and a short
    /// excerpt of the body as the description. `retryAfterHeader` (an HTTP `Retry-After` in seconds,
    /// as a proxy in front of the Bot API may send) counts when the body carries no `retry_after`.
    public init(status: Int, body: [UInt8], retryAfterHeader: String? = nil) {
        let headerSeconds = retryAfterHeader.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        self.status = status
        let envelope = (try? JSONValue.parse(body))?.objectValue
        guard let envelope, let ok = envelope["ok"]?.boolValue else {
            self.ok = false
            self.result = nil
            self.errorCode = status
            let excerpt = String(decoding: body.prefix(200), as: UTF8.self)
            self.description = excerpt.isEmpty ? nil : excerpt
            self.retryAfter = headerSeconds
            self.migrateToChatId = nil
            return
        }
        self.ok = ok && (200..<300).contains(status)
        self.result = envelope["result"]
        self.errorCode = envelope["error_code"]?.intValue ?? status
        self.description = envelope["description"]?.stringValue
        let parameters = envelope["parameters"]?.objectValue
        self.retryAfter = parameters?["retry_after"]?.intValue ?? headerSeconds
        self.migrateToChatId = parameters?["migrate_to_chat_id"]?.intValue.map { Int64($0) }
    }

    /// `error_code: description`, as shown in delivery reasons.
    public var reasonText: String {
        "\(errorCode): \(description ?? "no description")"
    }
}

/// What a Bot API answer means for one delivery (the dead-chat policy). Pure.
public enum TelegramOutcome: Sendable, Equatable {
    /// Accepted; the sent message's id, and its numeric chat id when returned.
    case delivered(messageId: Int?, chatId: Int64?)
    /// The chat is gone for this bot (blocked, deactivated, kicked, not found): remove the device.
    case dead(reason: String)
    /// Transient (429, 5xx, transport): try again, after `retryAfter` when Telegram said so.
    case retry(reason: String, retryAfter: Duration?)
    /// Permanent for this message; the chat is kept.
    case failed(reason: String)
    /// The bot token was rejected (401) or the API URL is wrong (404): a configuration error.
    case configuration(reason: String)

    /// Description prefixes of 403 answers that mean the chat is gone for this bot (matched
    /// case-insensitively after the `Forbidden: ` prefix).
    public static let deadForbidden = [
        "bot was blocked by the user", "user is deactivated", "bot was kicked", "bot is not a member",
        "bot can't initiate conversation",
    ]

    /// Classifies a response to `sendMessage`.
    public static func classify(_ response: TelegramResponse) -> TelegramOutcome {
        if response.ok {
            let message = response.result?.objectValue
            let chat = message?["chat"]?["id"]?.intValue.map { Int64($0) }
            return .delivered(messageId: message?["message_id"]?.intValue, chatId: chat)
        }
        let text = response.description ?? "no description"
        let lower = text.lowercased()
        let code = response.errorCode == 0 ? response.status : response.errorCode
        if code == 429 || response.status == 429 {
            return .retry(reason: response.reasonText, retryAfter: response.retryAfter.map(RetryAfter.seconds(_:)))
        }
        if (500...599).contains(code) || (500...599).contains(response.status) {
            return .retry(reason: response.reasonText, retryAfter: response.retryAfter.map(RetryAfter.seconds(_:)))
        }
        if code == 401 || response.status == 401 {
            return .configuration(reason: "bot token rejected (401)")
        }
        if code == 404 || response.status == 404 {
            return .configuration(reason: "Bot API answered 404 (\(text)): check bot-token and api")
        }
        if code == 403 {
            if deadForbidden.contains(where: { lower.contains($0) }) { return .dead(reason: response.reasonText) }
            return .failed(reason: response.reasonText)
        }
        if code == 400 {
            if let newId = response.migrateToChatId {
                return .failed(
                    reason:
                        "\(response.reasonText); the group is now supergroup \(newId): register chatId \(newId) instead"
                )
            }
            if lower.contains("chat not found") { return .dead(reason: response.reasonText) }
            return .failed(reason: response.reasonText)
        }
        return .failed(reason: response.reasonText)
    }
}
