import ChannelAPI

/// A Telegram chat address: a numeric id (negative for groups, `-100…` for supergroups and
/// channels; up to 52 significant bits) or a public `@username`.
public struct TelegramChatID: Sendable, Hashable, CustomStringConvertible {
    /// The canonical text: the decimal id, or `@name` as given.
    public let text: String
    /// The numeric id, when it is one.
    public let number: Int64?

    /// Parses `-1001234567890`, `42` or `@channel_name`; nil for anything else.
    public init?(_ raw: String) {
        let s = raw.trimmingPrefixAndSuffixSpaces
        if let n = Int64(s), n.magnitude < (1 << 53) {
            number = n
            text = String(n)
            return
        }
        guard s.hasPrefix("@"), s.count >= 2, s.count <= 65,
            s.dropFirst().unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
            })
        else { return nil }
        number = nil
        text = s
    }

    /// A numeric id.
    public init(_ number: Int64) {
        self.number = number
        self.text = String(number)
    }

    /// The chat of a registered device (`chatId` field), if valid.
    public init?(device: Device) {
        guard let s = device.chatIdString else { return nil }
        self.init(s)
    }

    /// The `chat_id` parameter: a JSON number for numeric ids, a string for `@name`.
    public var json: JSONValue {
        if let number { return .number(Double(number)) }
        return .string(text)
    }

    /// The canonical text.
    public var description: String { text }
}

extension String {
    var trimmingPrefixAndSuffixSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}

/// One inline keyboard button.
public struct TelegramButton: Sendable, Equatable {
    /// What pressing the button does.
    public enum Kind: Sendable, Equatable {
        /// Sends `callback_data` (1-64 bytes) back to the bot.
        case callback(String)
        /// Opens a URL.
        case url(String)
    }

    /// The label.
    public var text: String
    /// The action.
    public var kind: Kind
    /// Shown in the `danger` style (Bot API 10).
    public var destructive: Bool

    /// Creates a button.
    public init(text: String, kind: Kind, destructive: Bool = false) {
        self.text = text
        self.kind = kind
        self.destructive = destructive
    }

    /// The `InlineKeyboardButton` object: `text` plus exactly one action field.
    public var json: JSONValue {
        var o: [String: JSONValue] = ["text": .string(text)]
        switch kind {
        case .callback(let data): o["callback_data"] = .string(data)
        case .url(let url): o["url"] = .string(url)
        }
        if destructive { o["style"] = "danger" }
        return .object(o)
    }
}

/// The text layout and request bodies of Herald's Telegram messages. Pure: no I/O.
///
/// Layout (HTML parse mode; every piece of user text is escaped):
///
/// ```
/// ⚠️ <b>Title</b>
/// Body
///
/// <i>session name</i> · /sessions/5f0c
/// ```
///
/// - The first line is the severity emoji (ℹ️ info, ✅ success, ⚠️ warning, 🚨 error; none when no
///   severity is given) and the title in bold. Without a title the emoji starts the body.
/// - The body follows on the next line, as given (newlines kept).
/// - After a blank line, the context line: `data.sessionName` in italics and the notification's `url`,
///   joined by ` · `. Absent parts are left out; without both there is no context line.
/// - When the whole text is longer than ``TelegramText/maxLength`` (minus ``outcomeReserve`` for
///   messages with callback buttons), the body is cut and ends with `…` and an italic `(truncated)`
///   line; the title and context line are kept. Only when they alone are too long is the end cut.
public enum TelegramMessage {
    /// Visible characters kept free in messages with callback buttons for the outcome line appended
    /// when a button is pressed, so the edited text stays within the limit.
    public static let outcomeReserve = 160

    /// The emoji shown for a severity.
    public static func emoji(_ severity: Severity?) -> String? {
        switch severity {
        case .info: "ℹ️"
        case .success: "✅"
        case .warning: "⚠️"
        case .error: "🚨"
        case nil: nil
        }
    }

    /// The message text as spans, cut to `limit` visible UTF-16 code units.
    public static func spans(for notification: HeraldNotification, limit: Int = TelegramText.maxLength) -> (
        spans: [TelegramSpan], truncated: Bool
    ) {
        var header: [TelegramSpan] = []
        let emoji = emoji(notification.severity)
        if let title = notification.title, !title.isEmpty {
            if let emoji { header.append(TelegramSpan(emoji + " ")) }
            header.append(TelegramSpan(title, .bold))
        }
        var body: [TelegramSpan] = []
        if let text = notification.body, !text.isEmpty {
            body.append(TelegramSpan(header.isEmpty && emoji != nil ? "\(emoji ?? "") \(text)" : text))
        } else if header.isEmpty, let emoji {
            body.append(TelegramSpan(emoji))
        }
        var context: [TelegramSpan] = []
        if let session = notification.data["sessionName"], !session.isEmpty {
            context.append(TelegramSpan(session, .italic))
        }
        if let url = notification.url, !url.isEmpty {
            if !context.isEmpty { context.append(TelegramSpan(" · ")) }
            context.append(TelegramSpan(url))
        }

        let headerPart = header.isEmpty || body.isEmpty ? header : header + [TelegramSpan("\n")]
        let contextPart =
            context.isEmpty || (header.isEmpty && body.isEmpty) ? context : [TelegramSpan("\n\n")] + context
        let all = headerPart + body + contextPart
        if TelegramText.length(all) <= limit { return (all, false) }

        let fixed = TelegramText.length(headerPart) + TelegramText.length(contextPart)
        let markerLength = TelegramText.length(TelegramText.truncationMarker)
        if !body.isEmpty, limit - fixed > markerLength {
            let cut = TelegramText.truncate(body, limit: limit - fixed)
            return (headerPart + cut.spans + contextPart, true)
        }
        return TelegramText.truncate(all, limit: limit)
    }

    /// The line appended to a message when a button was pressed: `✅ Allow — by @user` (`❌` for a
    /// destructive action), after a blank line, cut to fit ``outcomeReserve``.
    public static func outcomeLine(actionTitle: String, destructive: Bool, by person: String) -> [TelegramSpan] {
        let mark = destructive ? "❌" : "✅"
        let suffix = " — by \(TelegramText.prefix(person, utf16Limit: 40))"
        let fixed = "\n\n\(mark) ".utf16.count + suffix.utf16.count
        let title = TelegramText.prefix(actionTitle, utf16Limit: max(1, outcomeReserve - fixed - 1))
        return [TelegramSpan("\n\n\(mark) "), TelegramSpan(title, .bold), TelegramSpan(suffix)]
    }

    /// The `reply_markup` for buttons: rows of at most three.
    public static func keyboard(_ buttons: [TelegramButton]) -> JSONValue {
        var rows: [JSONValue] = []
        var index = 0
        while index < buttons.count {
            let row = buttons[index..<min(index + 3, buttons.count)].map(\.json)
            rows.append(.array(Array(row)))
            index += 3
        }
        return ["inline_keyboard": .array(rows)]
    }

    /// A `reply_markup` that removes every button.
    public static let emptyKeyboard: JSONValue = ["inline_keyboard": []]

    /// The `sendMessage` body.
    public static func sendMessageBody(
        chat: TelegramChatID, html: String, threadId: Int?, silent: Bool, buttons: [TelegramButton]
    ) -> JSONValue {
        var o: [String: JSONValue] = [
            "chat_id": chat.json, "text": .string(html), "parse_mode": "HTML",
            "link_preview_options": ["is_disabled": true],
        ]
        if let threadId { o["message_thread_id"] = .number(Double(threadId)) }
        if silent { o["disable_notification"] = true }
        if !buttons.isEmpty { o["reply_markup"] = keyboard(buttons) }
        return .object(o)
    }

    /// The `editMessageText` body that keeps the text, appends the outcome and removes the buttons.
    public static func editMessageBody(chat: TelegramChatID, messageId: Int, html: String) -> JSONValue {
        [
            "chat_id": chat.json, "message_id": .number(Double(messageId)), "text": .string(html),
            "parse_mode": "HTML", "link_preview_options": ["is_disabled": true], "reply_markup": emptyKeyboard,
        ]
    }

    /// Whether a URL may be used for a URL button (Telegram accepts `http(s)://` and `tg://`).
    public static func isButtonURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        return (lower.hasPrefix("https://") || lower.hasPrefix("http://") || lower.hasPrefix("tg://")) && url.count > 8
    }
}
