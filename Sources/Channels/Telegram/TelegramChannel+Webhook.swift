import ChannelAPI
import ChannelSupport
import HeraldCrypto

/// Webhook mode (`updates: webhook`): Telegram posts each `Update` to `herald serve`
/// (`POST /v1/channels/{name}/telegram`) with the `secret_token` this channel gave `setWebhook`.
extension TelegramChannel {
    /// The `secret_token` of this channel's webhook: the one in the state store, or (with `create`)
    /// a fresh one stored there first, so every restart and every process sharing the store uses
    /// the same. 32 random bytes in base64url: 43 characters of `A-Za-z0-9_-`, as the Bot API allows
    /// (1–256). Nil when none is stored (and `create` is false) or the store cannot be read.
    func webhookSecret(create: Bool) -> String? {
        if let cached = webhookSecretCache.withLock({ $0 }) { return cached }
        let stored: String?
        do {
            if create {
                let fresh = Base64.urlEncode(random.bytes(32))
                stored = try state.update(Self.webhookSecretKey) { old -> ([UInt8]?, String) in
                    if let old, let text = String(validating: old, as: UTF8.self), Self.isValidSecret(text) {
                        return (old, text)
                    }
                    return (Array(fresh.utf8), fresh)
                }
            } else {
                stored = try state.value(forKey: Self.webhookSecretKey).flatMap {
                    String(validating: $0, as: UTF8.self)
                }.flatMap { Self.isValidSecret($0) ? $0 : nil }
            }
        } catch {
            logger.warning("webhook secret unavailable (state store)", ["error": "\(error)"])
            return nil
        }
        if let stored { webhookSecretCache.withLock { $0 = stored } }
        return stored
    }

    /// Whether `text` is a Bot API `secret_token`: 1–256 characters of `A-Z a-z 0-9 _ -`.
    static func isValidSecret(_ text: String) -> Bool {
        (1...256).contains(text.utf8.count)
            && text.utf8.allSatisfy { b in
                (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
                    || b == 0x2D
            }
    }

    /// Compares a presented secret with the channel's in constant time: both are hashed first, so
    /// neither their contents nor the expected length shows in the timing.
    static func secretMatches(_ presented: String, _ expected: String) -> Bool {
        let a = SHA256.hash(Array(presented.utf8))
        let b = SHA256.hash(Array(expected.utf8))
        // An empty digest means OpenSSL failed: never a match.
        return a.count == 32 && ConstantTime.equals(a, b)
    }

    /// Calls `setWebhook` with `webhook-url`, the channel's secret and
    /// `allowed_updates: ["callback_query"]` until Telegram accepts it or the task is cancelled
    /// (backoff 1 s doubling to 60 s on the injected clock; a 429 `retry_after` is honoured). The
    /// secret is never logged.
    func setWebhook() async {
        guard let url = configuration.webhookURL else { return }
        var backoff: Duration = .seconds(1)
        while !Task.isCancelled {
            var wait = backoff
            if let secret = webhookSecret(create: true) {
                let body: JSONValue = [
                    "url": .string(url), "secret_token": .string(secret), "allowed_updates": ["callback_query"],
                ]
                let answer = await api.call("setWebhook", body)
                if Task.isCancelled { return }
                switch answer {
                case .failure(let error):
                    if error.cancelled { return }
                    logger.warning("setWebhook failed; backing off", ["error": scrub(error.message, secret)])
                case .success(let response) where !response.ok:
                    let level: LogLevel = [400, 401, 404].contains(response.errorCode) ? .error : .warning
                    logger.log(
                        level, "setWebhook refused; backing off",
                        ["status": String(response.status), "description": scrub(response.reasonText, secret)])
                    if let after = response.retryAfter { wait = max(.seconds(1), RetryAfter.seconds(after)) }
                case .success:
                    logger.info("webhook set; updates arrive at webhook-url", [:])
                    return
                }
            }
            do { try await clock.sleep(for: wait) } catch { return }
            backoff = min(backoff * 2, .seconds(60))
        }
    }

    private func scrub(_ text: String, _ secret: String) -> String {
        Redaction.scrub(text, secrets: [secret])
    }

    /// Handles a webhook request (`kind` `telegram`) in webhook mode: the
    /// `X-Telegram-Bot-Api-Secret-Token` header must equal the channel's secret (compared in
    /// constant time; otherwise ``InboundWebhookAnswer/unauthorized`` and nothing is read or
    /// recorded); the body must be an `Update` (otherwise ``InboundWebhookAnswer/invalid(_:)``).
    /// A `callback_query` is handled exactly as with polling; other updates are accepted and ignored.
    /// In polling mode, or for another kind, the answer is ``InboundWebhookAnswer/notFound``.
    public func receiveWebhook(_ request: InboundWebhook, into sink: ChannelEventSink) async -> InboundWebhookAnswer {
        guard request.kind == "telegram", configuration.updates == .webhook else { return .notFound }
        guard let expected = webhookSecret(create: false), let presented = request.headers[Self.secretHeader],
            Self.secretMatches(presented, expected)
        else {
            logger.warning("webhook request without the right secret token; refused", [:])
            return .unauthorized
        }
        switch TelegramUpdate.parse(request.body) {
        case .failure(let error):
            return .invalid(error.description)
        case .success(let update):
            if let query = update.callbackQuery { await handleCallback(query, sink: sink) }
            return .accepted
        }
    }
}
