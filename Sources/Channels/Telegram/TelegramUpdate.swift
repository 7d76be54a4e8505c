import ChannelAPI

/// One Bot API `Update`, as `getUpdates` returns it in its `result` array and as Telegram posts it to
/// a webhook. Only what the channel uses is kept: the `update_id` and a `callback_query`. Pure: a
/// value in, a parsed value or a ``TelegramUpdateError`` out; both the polling loop and
/// ``TelegramChannel/receiveWebhook(_:into:)`` parse with it.
public struct TelegramUpdate: Sendable, Equatable {
    /// `update_id`.
    public var updateId: Int
    /// `callback_query`, when the update is a button press.
    public var callbackQuery: TelegramCallbackQuery?

    /// Parses a webhook body: one JSON `Update` object.
    public static func parse(_ body: [UInt8]) -> Result<TelegramUpdate, TelegramUpdateError> {
        let json: JSONValue
        do { json = try JSONValue.parse(body) } catch {
            return .failure(TelegramUpdateError(code: .invalidJSON, message: error.description))
        }
        return parse(json)
    }

    /// Parses one `Update` value (an element of `getUpdates`' `result`).
    public static func parse(_ json: JSONValue) -> Result<TelegramUpdate, TelegramUpdateError> {
        guard let object = json.objectValue else {
            return .failure(TelegramUpdateError(code: .notAnObject, message: "an Update must be a JSON object"))
        }
        guard let updateId = object["update_id"]?.intValue else {
            return .failure(TelegramUpdateError(code: .missingUpdateId, message: "update_id must be an integer"))
        }
        guard let raw = object["callback_query"] else { return .success(TelegramUpdate(updateId: updateId)) }
        switch TelegramCallbackQuery.parse(raw) {
        case .success(let query): return .success(TelegramUpdate(updateId: updateId, callbackQuery: query))
        case .failure(let error): return .failure(error)
        }
    }
}

/// A `callback_query`: a press of an inline keyboard button.
public struct TelegramCallbackQuery: Sendable, Equatable {
    /// `id`, answered with `answerCallbackQuery`.
    public var id: String
    /// `data`: the button's `callback_data` (empty when absent).
    public var data: String
    /// `message.chat.id`: the chat the pressed message is in, when Telegram sent the message.
    public var chatId: Int64?
    /// `message.message_id`.
    public var messageId: Int?
    /// `from.id` as text, when present.
    public var fromId: String?
    /// `from.username`, without `@`.
    public var fromUsername: String?

    /// Who pressed: `@username`, else the user id, else `unknown`.
    public var person: String {
        if let fromUsername { return "@" + fromUsername }
        return fromId ?? "unknown"
    }

    /// Parses a `callback_query` object. Only `id` is required (a string); a field of the wrong
    /// type counts as absent, as with the polling loop before this parser.
    public static func parse(_ json: JSONValue) -> Result<TelegramCallbackQuery, TelegramUpdateError> {
        guard let object = json.objectValue else {
            return .failure(
                TelegramUpdateError(code: .invalidCallbackQuery, message: "callback_query must be a JSON object"))
        }
        guard let id = object["id"]?.stringValue, !id.isEmpty else {
            return .failure(
                TelegramUpdateError(
                    code: .invalidCallbackQuery, message: "callback_query.id must be a non-empty string"))
        }
        let message = object["message"]?.objectValue
        let from = object["from"]?.objectValue
        let fromId = from?["id"]?.intValue.map(String.init)
        return .success(
            TelegramCallbackQuery(
                id: id, data: object["data"]?.stringValue ?? "",
                chatId: message?["chat"]?["id"]?.intValue.map { Int64($0) },
                messageId: message?["message_id"]?.intValue, fromId: fromId,
                fromUsername: from?["username"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }))
    }
}

/// Why an `Update` could not be read. The message quotes no input.
public struct TelegramUpdateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Code: String, Sendable {
        /// The body is not JSON.
        case invalidJSON = "invalid-json"
        /// The JSON is not an object.
        case notAnObject = "not-an-object"
        /// `update_id` is missing or not an integer.
        case missingUpdateId = "missing-update-id"
        /// `callback_query` is not an object or has no `id`.
        case invalidCallbackQuery = "invalid-callback-query"
    }

    /// The kind.
    public var code: Code
    /// A human explanation.
    public var message: String

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
