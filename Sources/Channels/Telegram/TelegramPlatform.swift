import ChannelAPI

/// The platform the Telegram module declares: `telegram`, a `chatId` (a numeric chat id below 2^53
/// or an `@channelname`, checked once here); its address is `telegram:<chat id>`.
public enum TelegramPlatform {
    /// `telegram`.
    public static let descriptor = PlatformDescriptor(
        name: "telegram", address: { $0.chatIdString.map { "telegram:\($0)" } }, addressIsSecret: false,
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["chatId"])
            let text: String
            switch fields["chatId"] {
            case .string(let s) where !s.isEmpty: text = s
            case .number where fields["chatId"]?.intValue != nil: text = String(fields["chatId"]?.intValue ?? 0)
            default: throw ValidationError(field: "chatId", "required: a chat id number or @channelname string")
            }
            guard TelegramChatID(text) != nil else {
                throw ValidationError(field: "chatId", "must be a numeric chat id or an @channelname")
            }
        })
}

extension Device {
    /// `chatId` as text (Telegram ids may be numbers or `@channel` names).
    public var chatIdString: String? {
        switch fields["chatId"] {
        case .string(let s): return s
        case .number: return fields["chatId"]?.intValue.map(String.init)
        default: return nil
        }
    }
}
