import ChannelAPI
import ChannelSupport
import Foundation
import HeraldSync

/// `type: telegram`: sends notifications as Bot API `sendMessage` (HTML parse mode) to registered
/// chats (platform `telegram`, field `chatId`) and to static `chat-ids:`, turns actions into inline
/// keyboard buttons and receives button presses by long polling `getUpdates`, or, with
/// `updates: webhook`, as Telegram's posts to `herald serve` (``receiveWebhook(_:into:)``).
///
/// ```yaml
/// telegram:
///   type: telegram
///   bot-token: ${TELEGRAM_BOT_TOKEN}
///   chat-ids: [-1001234567890]
///   silent-info: true
/// ```
///
/// See `docs/channels/telegram.md` for keys, layout, limits and the outcome table.
public struct TelegramChannel: Channel {
    /// The settings.
    public let configuration: TelegramConfiguration
    let api: TelegramBotAPI
    let clock: any HeraldClock
    let random: any RandomSource
    let state: any ChannelStateStore
    let logger: ChannelLogger
    let callbacks: TelegramCallbackStore
    let limits = TelegramFloodLimits()
    /// Deliveries of one batch in flight at once.
    let concurrency = 16
    /// The webhook secret once read or made (``webhookSecretKey``).
    let webhookSecretCache = Locked<String?>(nil)

    /// The state key of the `getUpdates` offset.
    static let offsetKey = "updates:offset"
    /// The state key of the webhook `secret_token` (webhook mode), shared by restarts and processes.
    static let webhookSecretKey = "webhook:secret"
    /// The header Telegram sends the `secret_token` in (lower case, as ``InboundWebhook`` has it).
    static let secretHeader = "x-telegram-bot-api-secret-token"

    /// The factory registered under `telegram` (platform `telegram`).
    public static let factory = ChannelFactory(
        type: "telegram", defaultPlatforms: ["telegram"], platforms: [TelegramPlatform.descriptor]
    ) {
        config, context throws(ConfigError) in
        TelegramChannel(configuration: try TelegramConfiguration(config: config), context: context)
    }

    /// Creates the channel (no I/O).
    public init(configuration: TelegramConfiguration, context: ChannelContext) {
        self.configuration = configuration
        self.api = TelegramBotAPI(http: context.http, api: configuration.api, token: configuration.botToken)
        self.clock = context.clock
        self.random = context.random
        self.state = context.state
        self.logger = context.logger.withSecrets([configuration.botToken])
        self.callbacks = TelegramCallbackStore(
            state: context.state, random: context.random, ttl: configuration.callbackTTL)
    }

    /// The bot token, and its secret part after `:` on its own (a proxy that percent-encodes or
    /// otherwise rewrites the `:` of an echoed request path still leaks that part).
    public var secrets: [String] {
        let token = configuration.botToken
        let webhook = webhookSecretCache.withLock { $0 }.map { [$0] } ?? []
        guard let colon = token.firstIndex(of: ":") else { return [token] + webhook }
        return [token, String(token[token.index(after: colon)...])] + webhook
    }

    // MARK: - Sending

    /// Sends the notification to every target's chat and, on the first batch of a notification, to
    /// the static `chat-ids:` (see the docs for the exact rule).
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        do { try callbacks.collectGarbage(now: clock.now()) } catch {
            logger.warning("could not collect expired callbacks", ["error": "\(error)"])
        }
        let notification = request.notification
        var jobs: [(target: DeliveryTarget?, chat: TelegramChatID?, deviceId: String?, deliveryId: String)] = []
        for target in request.targets {
            jobs.append(
                (
                    target, target.device.flatMap { TelegramChatID(device: $0) }, target.device?.deviceId,
                    target.deliveryId
                ))
        }
        if !configuration.chatIds.isEmpty, claimStaticSend(notification.id) {
            let deviceChats = Set(jobs.compactMap { $0.chat })
            for chat in configuration.chatIds where !deviceChats.contains(chat) {
                jobs.append((nil, chat, nil, "\(notification.id):chat:\(chat.text)"))
            }
        }

        let batch = TelegramBatch()
        let results = await ConcurrentMap.map(jobs, limit: concurrency) { job in
            await self.run(job: job, notification: notification, batch: batch)
        }
        return results.compactMap { $0 }
    }

    /// One send; nil for a static chat (its outcome is logged).
    func run(
        job: (target: DeliveryTarget?, chat: TelegramChatID?, deviceId: String?, deliveryId: String),
        notification: HeraldNotification, batch: TelegramBatch
    ) async -> DeliveryResult? {
        let target = job.target ?? DeliveryTarget(device: nil, deliveryId: job.deliveryId)
        guard let chat = job.chat else {
            return .failed(target, reason: "device has no valid chatId")
        }
        // After a 401/404 the rest of the batch is not sent: every request would be refused the same way.
        if let reason = batch.configurationError {
            return job.target == nil ? nil : .failed(target, reason: reason)
        }
        let result = await send(notification, to: chat, target: target, batch: batch)
        guard job.target == nil else { return result }
        let fields = ["chat": "chat:\(chat.text)", "outcome": result.outcome.rawValue, "reason": result.reason ?? ""]
        if result.outcome == .delivered {
            logger.info("static chat delivered", fields)
        } else {
            logger.warning("static chat not delivered (static chats are not retried)", fields)
        }
        return nil
    }

    /// Marks the static chats as sent for a notification; true the first time (atomic).
    func claimStaticSend(_ notificationId: String) -> Bool {
        let key = "static:" + notificationId
        do {
            let first = try state.update(key) { old in old == nil ? (Array("1".utf8), true) : (old, false) }
            if first {
                try callbacks.schedule(
                    [key], expiresAt: clock.now().millisecondsSince1970 + configuration.callbackTTL.milliseconds)
            }
            return first
        } catch {
            logger.warning("state store unavailable; static chats skipped for this batch", ["error": "\(error)"])
            return false
        }
    }

    /// Sends one message to one chat and maps the answer to a result.
    func send(
        _ notification: HeraldNotification, to chat: TelegramChatID, target: DeliveryTarget,
        batch: TelegramBatch = TelegramBatch()
    ) async
        -> DeliveryResult
    {
        do {
            if let wait = try await limits.acquire(chat: chat, state: state, clock: clock) {
                return .retry(target, reason: "deferred by the flood limit for chat \(chat.text)", retryAfter: wait)
            }
        } catch is CancellationError {
            return .retry(target, reason: "cancelled while waiting for the flood limit")
        } catch {
            return .retry(target, reason: "flood-limit state unavailable: \(error)")
        }

        let hasCallbacks = notification.actions.contains { $0.url == nil }
        let limit = TelegramText.maxLength - (hasCallbacks ? TelegramMessage.outcomeReserve : 0)
        let html = TelegramText.render(TelegramMessage.spans(for: notification, limit: limit).spans)

        let prepared: (buttons: [TelegramButton], group: String, ids: [String])
        do {
            prepared = try callbacks.prepare(
                notification: notification, chat: chat, deviceId: target.device?.deviceId,
                deliveryId: target.deliveryId, now: clock.now())
        } catch {
            return .retry(target, reason: "callback state unavailable: \(error)")
        }

        let thread = notification.telegram["threadId"]?.intValue ?? configuration.threadId
        let silent = configuration.silentInfo && notification.severity == .info
        let body = TelegramMessage.sendMessageBody(
            chat: chat, html: html, threadId: thread, silent: silent, buttons: prepared.buttons)

        let answer = await api.call("sendMessage", body)
        let response: TelegramResponse
        switch answer {
        case .failure(let error):
            try? callbacks.remove(group: prepared.group, ids: prepared.ids)
            return .retry(target, reason: error.message)
        case .success(let r):
            response = r
        }

        switch TelegramOutcome.classify(response) {
        case .delivered(let messageId, let numericChat):
            do {
                try callbacks.attach(
                    group: prepared.group, ids: prepared.ids, messageId: messageId,
                    chat: numericChat.map { TelegramChatID($0) }, html: html)
            } catch {
                logger.warning("could not store the message id for callbacks", ["error": "\(error)"])
            }
            return .delivered(target, status: response.status, providerMessageId: messageId.map(String.init))
        case .dead(let reason):
            try? callbacks.remove(group: prepared.group, ids: prepared.ids)
            return .dead(target, status: response.status, reason: reason)
        case .retry(let reason, let after):
            try? callbacks.remove(group: prepared.group, ids: prepared.ids)
            if let after {
                try? limits.pause(
                    TelegramFloodLimits.chatKey(chat), rate: limits.perChatRate, capacity: 1, for: after, state: state,
                    now: clock.now())
            }
            return .retry(target, status: response.status, reason: reason, retryAfter: after)
        case .failed(let reason):
            try? callbacks.remove(group: prepared.group, ids: prepared.ids)
            return .failed(target, status: response.status, reason: reason)
        case .configuration(let reason):
            try? callbacks.remove(group: prepared.group, ids: prepared.ids)
            guard batch.reportConfigurationError(reason) else {
                return .failed(target, status: response.status, reason: reason)
            }
            logger.error(
                "Telegram refused the bot configuration: \(reason)",
                ["status": String(response.status), "description": response.description ?? ""])
            return .failed(target, status: response.status, reason: reason)
        }
    }

    // MARK: - Receiving

    /// Receives button presses until the task is cancelled. With `updates: poll` it long-polls
    /// `getUpdates`; the offset (last handled `update_id` + 1) is kept in the state store after each
    /// update. With `updates: webhook` it calls `setWebhook` once (retrying with backoff) and returns:
    /// the presses then arrive through ``receiveWebhook(_:into:)``.
    public func receive(into sink: ChannelEventSink) async {
        switch configuration.updates {
        case .poll: await poll(into: sink)
        case .webhook: await setWebhook()
        }
    }

    /// The `getUpdates` loop.
    func poll(into sink: ChannelEventSink) async {
        var backoff: Duration = .seconds(1)
        let timeoutSeconds = Int(configuration.pollTimeout.components.seconds)
        while !Task.isCancelled {
            var body: [String: JSONValue] = [
                "timeout": .number(Double(timeoutSeconds)), "allowed_updates": ["callback_query"],
            ]
            if let offset = readOffset() { body["offset"] = .number(Double(offset)) }
            let answer = await api.call(
                "getUpdates", .object(body), timeout: configuration.pollTimeout + .seconds(15))
            if Task.isCancelled { return }
            var wait: Duration?
            switch answer {
            case .failure(let error):
                if error.cancelled { return }
                logger.warning("getUpdates failed; backing off", ["error": error.message])
                wait = backoff
            case .success(let response) where !response.ok:
                let level: LogLevel = [401, 404, 409].contains(response.errorCode) ? .error : .warning
                logger.log(
                    level, "getUpdates refused; backing off",
                    ["status": String(response.status), "description": response.reasonText])
                wait = response.retryAfter.map { max(.seconds(1), RetryAfter.seconds($0)) } ?? backoff
            case .success(let response):
                backoff = .seconds(1)
                let updates = (response.result?.arrayValue ?? []).compactMap { u -> (Int, JSONValue)? in
                    u["update_id"]?.intValue.map { ($0, u) }
                }
                for (id, raw) in updates.sorted(by: { $0.0 < $1.0 }) {
                    if let offset = readOffset(), id < offset { continue }
                    switch TelegramUpdate.parse(raw) {
                    case .success(let update):
                        if let query = update.callbackQuery { await handleCallback(query, sink: sink) }
                    case .failure(let error):
                        logger.warning("unreadable update skipped", ["update": String(id), "error": error.description])
                    }
                    writeOffset(id + 1)
                }
            }
            if let wait {
                do { try await clock.sleep(for: wait) } catch { return }
                backoff = min(backoff * 2, .seconds(60))
            }
        }
    }

    func readOffset() -> Int? {
        guard let bytes = try? state.value(forKey: Self.offsetKey) else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self))
    }

    func writeOffset(_ offset: Int) {
        do {
            try state.update(Self.offsetKey) { old -> ([UInt8]?, Void) in
                let current = old.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                return (Array(String(max(current, offset)).utf8), ())
            }
        } catch {
            logger.warning("could not persist the getUpdates offset", ["error": "\(error)"])
        }
    }

    /// Handles one `callback_query` (from polling or the webhook): validates the mapping, records the
    /// action, answers, edits.
    func handleCallback(_ query: TelegramCallbackQuery, sink: ChannelEventSink) async {
        let queryId = query.id
        let data = query.data
        let chat = query.chatId
        let messageId = query.messageId
        let fromId = query.fromId ?? ""
        let person = query.person

        let record: TelegramCallbackRecord?
        do { record = try callbacks.lookup(data) } catch {
            logger.warning("callback state unavailable", ["error": "\(error)"])
            record = nil
        }
        guard let record, record.expiresAt > clock.now().millisecondsSince1970 else {
            await answerCallback(queryId, text: Self.expiredText)
            return
        }
        guard let chat, record.chat == String(chat), record.messageId == nil || record.messageId == messageId else {
            logger.warning(
                "callback from a chat that was not sent this notification; refused",
                ["chat": chat.map(String.init) ?? "none", "notification": record.notificationId])
            await answerCallback(queryId, text: Self.refusedText)
            return
        }
        let keyboard: TelegramKeyboardRecord?
        do { keyboard = try callbacks.claim(group: record.group) } catch {
            logger.warning("callback state unavailable", ["error": "\(error)"])
            keyboard = nil
        }
        guard let keyboard else {
            await answerCallback(queryId, text: Self.expiredText)
            return
        }
        var actionData = ["chatId": String(chat), "from": person]
        if !fromId.isEmpty { actionData["fromId"] = fromId }
        do {
            try await sink.record(
                ChannelEvent(
                    notificationId: record.notificationId, kind: .action, actionId: record.actionId,
                    actionData: actionData, deviceId: record.deviceId))
        } catch {
            logger.info("action for an unknown notification", ["notification": record.notificationId])
            await answerCallback(queryId, text: Self.expiredText)
            try? callbacks.remove(group: record.group, ids: keyboard.ids)
            return
        }
        await answerCallback(queryId, text: TelegramText.prefix(record.actionTitle, utf16Limit: 190))
        if let messageId {
            let line = TelegramMessage.outcomeLine(
                actionTitle: record.actionTitle, destructive: record.destructive, by: person)
            let html = keyboard.html + TelegramText.render(line)
            let body = TelegramMessage.editMessageBody(chat: TelegramChatID(chat), messageId: messageId, html: html)
            switch await api.call("editMessageText", body) {
            case .failure(let error):
                logger.warning("editMessageText failed", ["error": error.message])
            case .success(let response) where !response.ok:
                if !(response.description ?? "").lowercased().contains("message is not modified") {
                    logger.warning("editMessageText refused", ["description": response.reasonText])
                }
            case .success:
                break
            }
        }
        try? callbacks.remove(group: record.group, ids: keyboard.ids)
    }

    /// The answer to an unknown, stale or already used button.
    static let expiredText = "This request has expired."
    /// The answer to a button pressed in a chat that was not sent the notification.
    static let refusedText = "This button is not valid in this chat."

    func answerCallback(_ id: String, text: String) async {
        let body: JSONValue = ["callback_query_id": .string(id), "text": .string(text)]
        switch await api.call("answerCallbackQuery", body) {
        case .failure(let error):
            logger.warning("answerCallbackQuery failed", ["error": error.message])
        case .success(let response) where !response.ok:
            logger.warning("answerCallbackQuery refused", ["description": response.reasonText])
        case .success:
            break
        }
    }
}

/// Facts shared by the sends of one batch: a configuration error (401/404) is logged once and stops
/// the remaining sends of the batch.
final class TelegramBatch: Sendable {
    private let error = Locked<String?>(nil)

    /// The configuration error seen so far in this batch.
    var configurationError: String? { error.withLock { $0 } }

    /// Records a configuration error; true for the first one (which is logged).
    func reportConfigurationError(_ reason: String) -> Bool {
        error.withLock { e in
            defer { if e == nil { e = reason } }
            return e == nil
        }
    }
}
