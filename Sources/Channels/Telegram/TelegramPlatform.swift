import ChannelAPI

/// The platform the Telegram module declares: `telegram`, a `chatId` (a number or an `@channel`
/// name); its address is `telegram:<chat id>`.
public enum TelegramPlatform {
    /// `telegram`.
    public static let descriptor = PlatformDescriptor(
        name: "telegram", address: { $0.chatIdString.map { "telegram:\($0)" } },
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["chatId"])
            switch fields["chatId"] {
            case .string(let s) where !s.isEmpty: break
            case .number where fields["chatId"]?.intValue != nil: break
            default: throw ValidationError(field: "chatId", "required: a chat id number or @channelname string")
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
