import ChannelAPI
import Foundation
import HeraldSync
import RouterTesting
import Testing

@testable import TelegramChannel

private let botToken = "123456789:AAHwebhookBotTokenSecret_abcdefghij"
private let hookURL = "https://hub.example/v1/channels/telegram/telegram"

/// A scripted Bot API (in-process ``ScriptedTransport``): answers per method, records every call.
private final class BotAPI: Sendable {
    /// Answers for a method, used in order; the last one repeats.
    let scripts = Locked<[String: [Result<HTTPResponse, HTTPError>]]>([:])
    let transport: ScriptedTransport

    init() {
        let scripts = self.scripts
        transport = ScriptedTransport { request in
            let method = String(request.url.split(separator: "/").last ?? "")
            return scripts.withLock { s in
                guard var list = s[method], !list.isEmpty else {
                    return .success(Self.ok(method == "getUpdates" ? "[]" : "true"))
                }
                let first = list.removeFirst()
                if list.isEmpty { list = [first] }
                s[method] = list
                return first
            }
        }
    }

    static func ok(_ result: String) -> HTTPResponse {
        HTTPResponse(status: 200, body: Array(#"{"ok":true,"result":\#(result)}"#.utf8))
    }

    static func refused(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, body: Array(body.utf8))
    }

    func script(_ method: String, _ answers: [Result<HTTPResponse, HTTPError>]) {
        scripts.withLock { $0[method] = answers }
    }

    /// Parsed bodies of the calls to `method`.
    func bodies(_ method: String) throws -> [JSONValue] {
        try transport.requests.filter { $0.url == "https://api.telegram.org/bot\(botToken)/\(method)" }.map {
            try JSONValue.parse($0.body)
        }
    }

    var methods: [String] { transport.requests.map { String($0.url.split(separator: "/").last ?? "") } }
}

/// A sink that knows some notifications and records events.
private final class Sink: ChannelEventSink {
    struct Unknown: Error {}
    let known: Set<String>
    private let recorded = Locked<[ChannelEvent]>([])
    init(known: [String]) { self.known = Set(known) }
    var events: [ChannelEvent] { recorded.withLock { $0 } }
    func record(_ event: ChannelEvent) async throws {
        guard known.contains(event.notificationId) else { throw Unknown() }
        recorded.withLock { $0.append(event) }
    }
}

private struct Harness {
    let api: BotAPI
    let state: InMemoryChannelState
    let clock = ManualClock()
    let logs = RecordingLogSink()
    let channel: TelegramChannel

    init(
        updates: TelegramUpdatesMode = .webhook, api: BotAPI = BotAPI(), state: InMemoryChannelState = .init(),
        random: FixedRandom = FixedRandom()
    ) {
        self.api = api
        self.state = state
        let context = ChannelContext(
            name: "telegram", http: api.transport, clock: clock, random: random,
            logger: ChannelLogger(source: "telegram", sink: logs), state: state)
        channel = TelegramChannel(
            configuration: TelegramConfiguration(
                botToken: botToken, pollTimeout: .seconds(0), callbackTTL: .seconds(3600), updates: updates,
                webhookURL: updates == .webhook ? hookURL : nil),
            context: context)
    }

    /// Sends the permission notification to chat 1001 and returns the "Allow" button's callback data.
    func sendPermission() async throws -> String {
        api.script(
            "sendMessage",
            [.success(BotAPI.ok(#"{"message_id":55,"chat":{"id":1001,"type":"private"},"date":1,"text":"x"}"#))])
        let notification = HeraldNotification(
            id: "n-perm", title: "Permission Request", body: "Bash: ls",
            actions: [
                NotificationAction(id: "approve", title: "Allow"),
                NotificationAction(id: "deny", title: "Deny", destructive: true),
            ])
        let device = Device(deviceId: "tg-alice", platform: "telegram", fields: ["chatId": 1001])
        let results = await channel.deliver(
            DeliveryRequest(notification: notification, targets: [DeliveryTarget(device: device, deliveryId: "d1")]))
        #expect(results.first?.outcome == .delivered)
        let body = try #require(try api.bodies("sendMessage").last)
        let row = try #require(body["reply_markup"]?["inline_keyboard"]?.arrayValue?.first?.arrayValue)
        return try #require(row.first?["callback_data"]?.stringValue)
    }

    func webhook(_ body: String, secret: String?, kind: String = "telegram", sink: Sink) async -> InboundWebhookAnswer {
        var headers = ["content-type": "application/json"]
        if let secret { headers["x-telegram-bot-api-secret-token"] = secret }
        return await channel.receiveWebhook(
            InboundWebhook(kind: kind, headers: headers, body: Array(body.utf8)), into: sink)
    }
}

private func press(_ data: String, updateId: Int = 900, chat: Int64 = 1001) -> String {
    #"{"update_id":\#(updateId),"callback_query":{"id":"q1","from":{"id":7,"is_bot":false,"first_name":"Alice","username":"alice"},"chat_instance":"ci","data":"\#(data)","message":{"message_id":55,"date":1,"chat":{"id":\#(chat),"type":"private"},"text":"x"}}}"#
}

/// The Bot API's rule for `secret_token`: 1–256 characters of `A-Z a-z 0-9 _ -`.
private func isBotAPISecret(_ s: String) -> Bool {
    (1...256).contains(s.count)
        && s.unicodeScalars.allSatisfy {
            ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
                || $0 == "-"
        }
}

@Suite("Telegram webhook mode (in-process Bot API)")
struct TelegramWebhookTests {
    @Test func setWebhookCarriesTheURLASecretAndCallbackQueriesOnly() async throws {
        let h = Harness()
        await h.channel.receive(into: Sink(known: []))
        #expect(h.api.methods == ["setWebhook"])  // and no getUpdates
        let body = try #require(try h.api.bodies("setWebhook").first)
        #expect(body["url"] == .string(hookURL))
        #expect(body["allowed_updates"] == ["callback_query"])
        let secret = try #require(body["secret_token"]?.stringValue)
        #expect(isBotAPISecret(secret))
        #expect(secret.count >= 32)
        // Kept in the channel state, and scrubbed from results like the bot token.
        let stored = try #require(try h.state.value(forKey: "webhook:secret"))
        #expect(String(decoding: stored, as: UTF8.self) == secret)
        #expect(h.channel.secrets.contains(secret))
        #expect(!h.logs.text.contains(secret))
    }

    @Test func theSecretIsReusedAfterARestartAndByAnotherProcess() async throws {
        let state = InMemoryChannelState()
        let first = Harness(state: state, random: FixedRandom(pattern: [1, 2, 3]))
        await first.channel.receive(into: Sink(known: []))
        let secret = try #require(try first.api.bodies("setWebhook").first?["secret_token"]?.stringValue)

        // A restart (a new channel over the same state, a different random source) sends the same secret.
        let restarted = Harness(state: state, random: FixedRandom(pattern: [9, 8, 7, 6]))
        await restarted.channel.receive(into: Sink(known: []))
        #expect(try restarted.api.bodies("setWebhook").first?["secret_token"]?.stringValue == secret)

        // Another process that never called setWebhook accepts Telegram's post with that secret.
        let other = Harness(state: state, random: FixedRandom(pattern: [5]))
        let sink = Sink(known: [])
        #expect(await other.webhook(#"{"update_id":1}"#, secret: secret, sink: sink) == .accepted)
    }

    @Test func setWebhookIsRetriedWithBackoffAndLogsNoSecret() async throws {
        let h = Harness()
        h.api.script(
            "setWebhook",
            [
                .failure(HTTPError(.timeout, "operation timed out")),
                .success(
                    BotAPI.refused(
                        429,
                        #"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#
                    )),
                .success(
                    BotAPI.refused(400, #"{"ok":false,"error_code":400,"description":"Bad Request: bad webhook"}"#)),
                .success(BotAPI.ok("true")),
            ])
        let start = h.clock.now()
        await h.channel.receive(into: Sink(known: []))
        let calls = try h.api.bodies("setWebhook")
        #expect(calls.count == 4)
        // Every attempt uses the one stored secret.
        #expect(Set(calls.compactMap { $0["secret_token"]?.stringValue }).count == 1)
        // 1 s, then Telegram's retry_after (7 s), then the doubled backoff (4 s).
        #expect(h.clock.now().timeIntervalSince(start) == 12)
        let secret = try #require(calls.first?["secret_token"]?.stringValue)
        #expect(h.logs.text.contains("setWebhook refused"))
        #expect(!h.logs.text.contains(secret))
        #expect(!h.logs.text.contains(botToken))
    }

    @Test func aWrongOrMissingSecretIsUnauthorizedAndRecordsNothing() async throws {
        let h = Harness()
        await h.channel.receive(into: Sink(known: []))
        let data = try await h.sendPermission()
        let secret = try #require(try h.api.bodies("setWebhook").first?["secret_token"]?.stringValue)
        let sink = Sink(known: ["n-perm"])
        let before = h.api.methods.count
        #expect(await h.webhook(press(data), secret: nil, sink: sink) == .unauthorized)
        #expect(await h.webhook(press(data), secret: "wrong", sink: sink) == .unauthorized)
        #expect(await h.webhook(press(data), secret: String(secret.dropLast()), sink: sink) == .unauthorized)
        #expect(await h.webhook(press(data), secret: secret + "x", sink: sink) == .unauthorized)
        // A secret header with a body that is not even JSON: refused before the body is read.
        #expect(await h.webhook("garbage", secret: "wrong", sink: sink) == .unauthorized)
        #expect(sink.events.isEmpty)
        #expect(h.api.methods.count == before)  // no answerCallbackQuery, no edit
        // The button was not consumed: the right secret still records the press.
        #expect(await h.webhook(press(data), secret: secret, sink: sink) == .accepted)
        #expect(sink.events.count == 1)
    }

    @Test func beforeAnySecretExistsEveryPostIsUnauthorized() async throws {
        let h = Harness()
        let sink = Sink(known: ["n-perm"])
        #expect(await h.webhook(#"{"update_id":1}"#, secret: "", sink: sink) == .unauthorized)
        #expect(await h.webhook(#"{"update_id":1}"#, secret: nil, sink: sink) == .unauthorized)
    }

    @Test func theRightSecretRecordsTheActionAsPollingDoes() async throws {
        let h = Harness()
        await h.channel.receive(into: Sink(known: []))
        let data = try await h.sendPermission()
        let secret = try #require(try h.api.bodies("setWebhook").first?["secret_token"]?.stringValue)
        let sink = Sink(known: ["n-perm"])
        #expect(await h.webhook(press(data), secret: secret, sink: sink) == .accepted)
        let event = try #require(sink.events.first)
        #expect(event.notificationId == "n-perm")
        #expect(event.kind == .action)
        #expect(event.actionId == "approve")
        #expect(event.deviceId == "tg-alice")
        #expect(event.actionData["chatId"] == "1001")
        #expect(event.actionData["from"] == "@alice")
        #expect(try h.api.bodies("answerCallbackQuery").first?["text"] == "Allow")
        let edit = try #require(try h.api.bodies("editMessageText").first)
        #expect(edit["reply_markup"] == ["inline_keyboard": []])
        // Telegram redelivers an update it got no 200 for: the press counts once.
        #expect(await h.webhook(press(data), secret: secret, sink: sink) == .accepted)
        #expect(sink.events.count == 1)
        #expect(try h.api.bodies("answerCallbackQuery").last?["text"] == .string(TelegramChannel.expiredText))
    }

    @Test(arguments: [
        "not json", "[]", "42", #"{"callback_query":{"id":"q"}}"#, #"{"update_id":"7"}"#,
        #"{"update_id":1,"callback_query":"x"}"#, #"{"update_id":1,"callback_query":{"data":"abc"}}"#,
    ])
    func aMalformedUpdateIsInvalid(_ body: String) async throws {
        let h = Harness()
        await h.channel.receive(into: Sink(known: []))
        let secret = try #require(try h.api.bodies("setWebhook").first?["secret_token"]?.stringValue)
        let sink = Sink(known: ["n-perm"])
        let answer = await h.webhook(body, secret: secret, sink: sink)
        guard case .invalid(let reason) = answer else {
            Issue.record("expected invalid, got \(answer)")
            return
        }
        #expect(!reason.contains(secret))
        #expect(sink.events.isEmpty)
        #expect(h.api.methods == ["setWebhook"])
    }

    @Test func otherUpdateKindsAreAcceptedAndIgnored() async throws {
        let h = Harness()
        await h.channel.receive(into: Sink(known: []))
        let secret = try #require(try h.api.bodies("setWebhook").first?["secret_token"]?.stringValue)
        let sink = Sink(known: [])
        let message =
            #"{"update_id":5,"message":{"message_id":1,"date":1,"chat":{"id":1,"type":"private"},"text":"hi"}}"#
        #expect(await h.webhook(message, secret: secret, sink: sink) == .accepted)
        #expect(sink.events.isEmpty)
        #expect(await h.webhook(message, secret: secret, kind: "other", sink: sink) == .notFound)
    }

    @Test func pollingModeIsUnchanged() async throws {
        let h = Harness(updates: .poll)
        let data = try await h.sendPermission()
        // No webhook in polling mode: the route is not found, whatever the header says.
        let sink = Sink(known: ["n-perm"])
        #expect(await h.webhook(press(data), secret: "anything", sink: sink) == .notFound)
        #expect(sink.events.isEmpty)

        // One poll brings the press; the next ends the loop (a cancelled request), so the loop never
        // spins on instant empty answers holding a thread of the test pool.
        h.api.script(
            "getUpdates",
            [.success(BotAPI.ok("[" + press(data, updateId: 41) + "]")), .failure(HTTPError(.cancelled, "cancelled"))])
        await h.channel.receive(into: sink)
        #expect(try h.api.bodies("getUpdates").count == 2)
        #expect(sink.events.first?.actionId == "approve")
        #expect(!h.api.methods.contains("setWebhook"))
        let poll = try #require(try h.api.bodies("getUpdates").first)
        #expect(poll["allowed_updates"] == ["callback_query"])
        #expect(try h.state.value(forKey: "updates:offset").map { String(decoding: $0, as: UTF8.self) } == "42")
        #expect(try h.state.value(forKey: "webhook:secret") == nil)
    }
}

@Suite("Telegram webhook config")
struct TelegramWebhookConfigTests {
    private func load(_ yaml: String) throws -> TelegramConfiguration {
        try TelegramConfiguration(config: TestConfig.channel("bot-token: \"\(botToken)\"\n" + yaml, name: "telegram"))
    }

    private func error(_ yaml: String) -> ConfigError? {
        do {
            _ = try load(yaml)
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            return nil
        }
    }

    @Test func pollIsTheDefault() throws {
        let c = try load("")
        #expect(c.updates == .poll)
        #expect(c.webhookURL == nil)
    }

    @Test func webhookWithAnHTTPSURL() throws {
        let c = try load("updates: webhook\nwebhook-url: \(hookURL)\n")
        #expect(c.updates == .webhook)
        #expect(c.webhookURL == hookURL)
    }

    @Test func webhookNeedsAURL() throws {
        let e = try #require(error("updates: webhook\n"))
        #expect(e.message.contains("webhook-url"))
        #expect(e.mark?.line == 2)
    }

    @Test(arguments: [
        "http://hub.example/v1/channels/telegram/telegram", "https://", "hub.example/x",
        "https://user:pw@hub.example/x",
        "https://hub.example/a b", "https://hub.example/x#frag", "ftp://hub.example/x",
    ])
    func webhookURLMustBeHTTPS(_ url: String) throws {
        let e = try #require(error("updates: webhook\nwebhook-url: \"\(url)\"\n"))
        #expect(e.message.contains("webhook-url must be an https URL"))
        #expect(e.mark?.line == 3)
        #expect(e.mark?.column == 14)
    }

    @Test func webhookURLWithoutWebhookModeIsAnError() throws {
        let e = try #require(error("webhook-url: \(hookURL)\n"))
        #expect(e.message.contains("only used with updates: webhook"))
        #expect(e.mark?.line == 2)
    }

    @Test func updatesMustBePollOrWebhook() throws {
        let e = try #require(error("updates: push\n"))
        #expect(e.message.contains("poll, webhook"))
        #expect(e.mark?.line == 2)
    }
}

@Suite("TelegramUpdate parser")
struct TelegramUpdateTests {
    @Test func parsesACallbackQuery() throws {
        let update = try TelegramUpdate.parse(Array(press("abc", updateId: 12).utf8)).get()
        #expect(
            update
                == TelegramUpdate(
                    updateId: 12,
                    callbackQuery: TelegramCallbackQuery(
                        id: "q1", data: "abc", chatId: 1001, messageId: 55, fromId: "7", fromUsername: "alice")))
        #expect(update.callbackQuery?.person == "@alice")
    }

    @Test func anUpdateWithoutACallbackQuery() throws {
        #expect(
            try TelegramUpdate.parse(Array(#"{"update_id":3,"message":{}}"#.utf8)).get() == TelegramUpdate(updateId: 3))
    }

    @Test func fieldsOfTheWrongTypeCountAsAbsent() throws {
        let body =
            #"{"update_id":3,"callback_query":{"id":"q","data":5,"from":{"id":"x"},"message":{"chat":{"id":1.5}}}}"#
        let query = try #require(try TelegramUpdate.parse(Array(body.utf8)).get().callbackQuery)
        #expect(query == TelegramCallbackQuery(id: "q", data: ""))
        #expect(query.person == "unknown")
    }

    @Test func errorsHaveCodes() {
        func code(_ s: String) -> TelegramUpdateError.Code? {
            if case .failure(let e) = TelegramUpdate.parse(Array(s.utf8)) { return e.code }
            return nil
        }
        #expect(code("{") == .invalidJSON)
        #expect(code("[1]") == .notAnObject)
        #expect(code(#"{"update_id":1e300}"#) == .missingUpdateId)
        #expect(code(#"{"update_id":1,"callback_query":{"id":""}}"#) == .invalidCallbackQuery)
    }
}
