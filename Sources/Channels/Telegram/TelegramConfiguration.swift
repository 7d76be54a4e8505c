import ChannelAPI
import Foundation

/// How a Telegram channel receives button presses (`updates:`).
public enum TelegramUpdatesMode: String, Sendable, Equatable {
    /// Long-poll `getUpdates` (the default).
    case poll
    /// Let Telegram post updates to `herald serve` (`setWebhook`, `webhook-url`).
    case webhook
}

/// The settings of a `type: telegram` channel (see `docs/channels/telegram.md`).
public struct TelegramConfiguration: Sendable {
    /// `bot-token`: the token from @BotFather (`123456:ABC…`). A secret: never logged.
    public var botToken: String
    /// `api`: the Bot API base URL, without a trailing slash. Default `https://api.telegram.org`.
    public var api: String
    /// `chat-ids`: chats every notification routed here also goes to, once per notification.
    public var chatIds: [TelegramChatID]
    /// `thread-id`: the forum topic (`message_thread_id`); `notification.telegram.threadId` wins.
    public var threadId: Int?
    /// `silent-info`: send `info` notifications with `disable_notification`.
    public var silentInfo: Bool
    /// `poll-timeout`: the `getUpdates` long-poll timeout. Default 25 s.
    public var pollTimeout: Duration
    /// `callback-ttl`: how long buttons stay valid. Default 7 days.
    public var callbackTTL: Duration
    /// `updates`: `poll` (default) or `webhook`.
    public var updates: TelegramUpdatesMode
    /// `webhook-url`: the https URL Telegram posts updates to (required with `updates: webhook`),
    /// normally `https://<host>/v1/channels/<channel name>/telegram` in front of `herald serve`.
    public var webhookURL: String?

    /// Creates a configuration.
    public init(
        botToken: String, api: String = "https://api.telegram.org", chatIds: [TelegramChatID] = [],
        threadId: Int? = nil, silentInfo: Bool = false, pollTimeout: Duration = .seconds(25),
        callbackTTL: Duration = .seconds(7 * 86_400), updates: TelegramUpdatesMode = .poll, webhookURL: String? = nil
    ) {
        self.botToken = botToken
        self.api = api.hasSuffix("/") ? String(api.dropLast()) : api
        self.chatIds = chatIds
        self.threadId = threadId
        self.silentInfo = silentInfo
        self.pollTimeout = pollTimeout
        self.callbackTTL = callbackTTL
        self.updates = updates
        self.webhookURL = webhookURL
    }

    /// Whether `url` can be a webhook URL: `https://`, a host, no user info, no fragment, no spaces
    /// or control characters, at most 2048 bytes. Telegram itself accepts only ports 443, 80, 88 and
    /// 8443; that is left to Telegram's answer, which `setWebhook` logs.
    public static func isValidWebhookURL(_ url: String) -> Bool {
        guard url.utf8.count <= 2048, url.lowercased().hasPrefix("https://"),
            url.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value != 0x7F }),
            let comps = URLComponents(string: url), comps.scheme?.lowercased() == "https",
            let host = comps.host, !host.isEmpty, comps.user == nil, comps.password == nil, comps.fragment == nil
        else { return false }
        return true
    }

    /// Whether `token` has the shape of a bot token: digits, `:`, then `A-Z a-z 0-9 _ -`.
    public static func isPlausibleToken(_ token: String) -> Bool {
        let parts = token.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }),
            parts[1].count >= 20, parts[1].count <= 100,
            parts[1].unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-")
            })
        else { return false }
        return true
    }

    /// Reads the channel's YAML keys.
    public init(config: ChannelConfig) throws(ConfigError) {
        let token = try config.requiredString("bot-token")
        guard Self.isPlausibleToken(token) || config.isUnresolved("bot-token") else {
            // The value is not echoed: it may be a real token with a typo.
            throw config.error(at: "bot-token", "bot-token must look like 123456789:AAH… (the token from @BotFather)")
        }
        let api = try config.string("api") ?? "https://api.telegram.org"
        guard api.hasPrefix("https://") || api.hasPrefix("http://"), api.count > 8 else {
            throw config.error(at: "api", "api must be an http(s) URL")
        }
        var chats: [TelegramChatID] = []
        for raw in try config.stringList("chat-ids") ?? [] {
            guard let chat = TelegramChatID(raw) else {
                throw config.error(
                    at: "chat-ids", "chat-ids entries must be numeric chat ids or @channelname, got \"\(raw)\"")
            }
            if !chats.contains(chat) { chats.append(chat) }
        }
        let threadId = try config.int("thread-id", in: 1...Int(Int32.max))
        let silent = try config.bool("silent-info") ?? false
        let poll = try config.duration("poll-timeout") ?? .seconds(25)
        guard poll <= .seconds(50) else { throw config.error(at: "poll-timeout", "poll-timeout must be at most 50s") }
        let ttl = try config.duration("callback-ttl") ?? .seconds(7 * 86_400)
        guard ttl >= .seconds(1) else { throw config.error(at: "callback-ttl", "callback-ttl must be at least 1s") }
        let updates =
            TelegramUpdatesMode(rawValue: try config.choice("updates", ["poll", "webhook"]) ?? "poll") ?? .poll
        let webhookURL = try config.string("webhook-url")
        switch updates {
        case .poll:
            if webhookURL != nil {
                throw config.error(at: "webhook-url", "webhook-url is only used with updates: webhook")
            }
        case .webhook:
            guard let webhookURL, !webhookURL.isEmpty else {
                throw config.error(at: "updates", "updates: webhook needs webhook-url (an https URL)")
            }
            guard Self.isValidWebhookURL(webhookURL) || config.isUnresolved("webhook-url") else {
                throw config.error(
                    at: "webhook-url",
                    "webhook-url must be an https URL with a host, such as https://hub.example/v1/channels/telegram/telegram"
                )
            }
        }
        self.init(
            botToken: token, api: api, chatIds: chats, threadId: threadId, silentInfo: silent, pollTimeout: poll,
            callbackTTL: ttl, updates: updates, webhookURL: webhookURL)
    }
}
