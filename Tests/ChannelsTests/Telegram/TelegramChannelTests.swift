import ChannelAPI
import Foundation
import HeraldChannels
import HeraldSync
import RouterTesting
import Testing

@testable import TelegramChannel

private let token = "123456789:AAHtestBotTokenSecret_abcdefghijklmnop"

/// A scripted Bot API (``ScriptedTransport``) plus the channel under test.
private struct Harness {
    static let api = "https://api.telegram.test"
    let http = ScriptedTransport()
    let clock = ManualClock()
    let state = InMemoryChannelState()
    let logs = RecordingLogSink()
    let channel: TelegramChannel

    static func make(
        chatIds: [String] = [], threadId: Int? = nil, silentInfo: Bool = false, callbackTTL: Duration = .seconds(3600),
        api: String? = nil
    ) async throws -> Harness {
        try Harness(chatIds: chatIds, threadId: threadId, silentInfo: silentInfo, callbackTTL: callbackTTL, api: api)
    }

    private init(
        chatIds: [String], threadId: Int?, silentInfo: Bool, callbackTTL: Duration, api: String?
    ) throws {
        let context = ChannelContext(
            name: "telegram", http: http, clock: clock,
            random: FixedRandom(), logger: ChannelLogger(source: "telegram", sink: logs), state: state)
        let configuration = TelegramConfiguration(
            botToken: token, api: api ?? Self.api, chatIds: chatIds.compactMap { TelegramChatID($0) },
            threadId: threadId, silentInfo: silentInfo, pollTimeout: .seconds(25), callbackTTL: callbackTTL)
        channel = TelegramChannel(configuration: configuration, context: context)
    }

    func route(_ method: String, _ responses: [ScriptedResponse]) async throws {
        http.route("/bot\(token)/\(method)", method: "POST", responses)
    }

    /// Parsed JSON bodies of the requests to `method`, in order.
    func bodies(_ method: String) async throws -> [JSONValue] {
        try http.requests.filter { $0.path == "/bot\(token)/\(method)" }.map {
            try JSONValue.parse($0.body)
        }
    }

    /// Runs `receive` until the fake has answered `getUpdates` at least `polls` more times.
    func receive(into sink: RecordingSink, polls: Int) async throws {
        let before = try await bodies("getUpdates").count
        let task = Task { await channel.receive(into: sink) }
        let deadline = Date().addingTimeInterval(60)
        while try await bodies("getUpdates").count < before + polls, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        task.cancel()
        await task.value
        #expect(try await bodies("getUpdates").count >= before + polls)
    }

    func expectNoTokenInLogs() {
        #expect(!logs.text.contains(token))
        #expect(!logs.text.contains("AAHtestBotTokenSecret"))
    }
}

/// A ChannelEventSink that records events and knows a set of notifications.
private final class RecordingSink: ChannelEventSink {
    struct Unknown: Error {}
    private let state = Locked<(known: Set<String>, events: [ChannelEvent])>(([], []))

    init(known: [String]) { state.withLock { $0.known = Set(known) } }

    var events: [ChannelEvent] { state.withLock { $0.events } }

    func record(_ event: ChannelEvent) async throws {
        try state.withLock { s in
            guard s.known.contains(event.notificationId) else { throw Unknown() }
            s.events.append(event)
        }
    }
}

private func ok(_ result: String) -> ScriptedResponse { .json(200, #"{"ok":true,"result":\#(result)}"#) }

private func sent(messageId: Int, chat: Int64) -> ScriptedResponse {
    ok(#"{"message_id":\#(messageId),"chat":{"id":\#(chat),"type":"private"},"date":1767225600,"text":"x"}"#)
}

/// An empty `getUpdates` answer, given a short delay so a polling loop does not spin.
private func noUpdates() -> ScriptedResponse {
    var r = ok("[]")
    r.delay = .milliseconds(20)
    return r
}

private func updates(_ items: [String]) -> ScriptedResponse { ok("[" + items.joined(separator: ",") + "]") }

private func callbackUpdate(_ updateId: Int, query: String, data: String, chat: Int64, messageId: Int) -> String {
    #"{"update_id":\#(updateId),"callback_query":{"id":"\#(query)","from":{"id":7,"is_bot":false,"first_name":"Alice","username":"alice"},"chat_instance":"ci","data":"\#(data)","message":{"message_id":\#(messageId),"date":1767225600,"chat":{"id":\#(chat),"type":"private"},"text":"x"}}}"#
}

private func firstCallback(_ body: JSONValue) -> String? {
    body["reply_markup"]?["inline_keyboard"]?.arrayValue?.first?.arrayValue?.first?["callback_data"]?.stringValue
}

private func device(_ id: String = "tg-alice", chat: JSONValue = 1001) -> Device {
    Device(deviceId: id, platform: "telegram", fields: ["chatId": chat])
}

private func target(_ d: Device, _ deliveryId: String = "d1") -> DeliveryTarget {
    DeliveryTarget(device: d, deliveryId: deliveryId)
}

private let permission = HeraldNotification(
    id: "n-perm", type: "permission-request", title: "Permission Request", body: "Claude Bash: <rm -rf build>",
    severity: .warning, url: "/sessions/5f0c", data: ["sessionName": "claude - hapi"],
    actions: [
        NotificationAction(id: "approve", title: "Allow"),
        NotificationAction(id: "deny", title: "Deny", destructive: true),
        NotificationAction(id: "open", title: "Open", url: "https://example.com/s/5f0c"),
    ])

@Suite("Telegram channel against a scripted Bot API", .serialized)
struct TelegramChannelTests {
    @Test func sendsEscapedHTMLWithOptions() async throws {
        let h = try await Harness.make(threadId: 3, silentInfo: true)
        try await h.route("sendMessage", [sent(messageId: 55, chat: 1001)])
        let n = HeraldNotification(
            id: "n1", title: "<script>alert(1)</script>", body: "Tom &amp; Jerry 🐭 & friends", severity: .info,
            telegram: ["threadId": 9])
        let results = await h.channel.deliver(DeliveryRequest(notification: n, targets: [target(device())]))
        #expect(results.count == 1)
        #expect(results.first?.outcome == .delivered)
        #expect(results.first?.providerMessageId == "55")
        #expect(results.first?.deviceId == "tg-alice")
        let body = try #require(try await h.bodies("sendMessage").first)
        #expect(body["chat_id"] == 1001)
        #expect(body["parse_mode"] == "HTML")
        #expect(
            body["text"]?.stringValue
                == "ℹ️ <b>&lt;script&gt;alert(1)&lt;/script&gt;</b>\nTom &amp;amp; Jerry 🐭 &amp; friends")
        #expect(body["disable_notification"] == true)
        #expect(body["message_thread_id"] == 9)
        #expect(body["reply_markup"] == nil)

        // Not info: no disable_notification; the configured thread id applies.
        let w = HeraldNotification(id: "n2", title: "t", severity: .warning)
        _ = await h.channel.deliver(DeliveryRequest(notification: w, targets: [target(device(chat: "@alerts"))]))
        let second = try #require(try await h.bodies("sendMessage").last)
        #expect(second["disable_notification"] == nil)
        #expect(second["message_thread_id"] == 3)
        #expect(second["chat_id"] == "@alerts")
        h.expectNoTokenInLogs()
    }

    @Test func truncatesLongBodiesWithinTheLimit() async throws {
        let h = try await Harness.make()
        try await h.route("sendMessage", [sent(messageId: 1, chat: 1001)])
        let n = HeraldNotification(id: "long", title: "T", body: String(repeating: "a&b ", count: 2000))
        let results = await h.channel.deliver(DeliveryRequest(notification: n, targets: [target(device())]))
        #expect(results.first?.outcome == .delivered)
        let text = try #require(try await h.bodies("sendMessage").first?["text"]?.stringValue)
        #expect(text.hasSuffix("…<i>\n(truncated)</i>"))
        // Visible length after entity parsing.
        let visible = text.replacingOccurrences(of: "<b>", with: "").replacingOccurrences(of: "</b>", with: "")
            .replacingOccurrences(of: "<i>", with: "").replacingOccurrences(of: "</i>", with: "")
            .replacingOccurrences(of: "&amp;", with: "&")
        #expect(visible.utf16.count <= 4096)
        #expect(!visible.contains("&amp"))
    }

    @Test func keyboardAndCallbackRoundTrip() async throws {
        let h = try await Harness.make()
        try await h.route("sendMessage", [sent(messageId: 55, chat: 1001)])
        let results = await h.channel.deliver(DeliveryRequest(notification: permission, targets: [target(device())]))
        #expect(results.first?.outcome == .delivered)
        let body = try #require(try await h.bodies("sendMessage").first)
        let row = try #require(body["reply_markup"]?["inline_keyboard"]?.arrayValue?.first?.arrayValue)
        #expect(row.count == 3)
        #expect(row[0]["text"] == "Allow")
        #expect(row[1]["style"] == "danger")
        #expect(row[2]["url"] == "https://example.com/s/5f0c")
        #expect(row[2]["callback_data"] == nil)
        let allow = try #require(row[0]["callback_data"]?.stringValue)
        let deny = try #require(row[1]["callback_data"]?.stringValue)
        #expect(allow != deny)
        #expect(allow.utf8.count == 12)

        try await h.route(
            "getUpdates",
            [updates([callbackUpdate(10, query: "q1", data: allow, chat: 1001, messageId: 55)]), noUpdates()])
        try await h.route("answerCallbackQuery", [ok("true")])
        try await h.route("editMessageText", [sent(messageId: 55, chat: 1001)])
        let sink = RecordingSink(known: ["n-perm"])
        try await h.receive(into: sink, polls: 2)

        #expect(
            sink.events == [
                ChannelEvent(
                    notificationId: "n-perm", kind: .action, actionId: "approve",
                    actionData: ["chatId": "1001", "from": "@alice", "fromId": "7"], deviceId: "tg-alice")
            ])
        let polls = try await h.bodies("getUpdates")
        #expect(polls[0]["allowed_updates"] == ["callback_query"])
        #expect(polls[0]["timeout"] == 25)
        #expect(polls[0]["offset"] == nil)
        #expect(polls[1]["offset"] == 11)
        #expect(try h.state.value(forKey: "updates:offset") == Array("11".utf8))
        let answers = try await h.bodies("answerCallbackQuery")
        #expect(answers.count == 1)
        #expect(answers.first?["callback_query_id"] == "q1")
        #expect(answers.first?["text"] == "Allow")
        let edit = try #require(try await h.bodies("editMessageText").first)
        #expect(edit["chat_id"] == 1001)
        #expect(edit["message_id"] == 55)
        #expect(edit["reply_markup"] == ["inline_keyboard": []])
        let original = try #require(body["text"]?.stringValue)
        #expect(edit["text"]?.stringValue == original + "\n\n✅ <b>Allow</b> — by @alice")

        // A second pass starts from the persisted offset; even if the update came again, it is not replayed.
        try await h.route(
            "getUpdates",
            [updates([callbackUpdate(10, query: "q1", data: allow, chat: 1001, messageId: 55)]), noUpdates()])
        try await h.receive(into: sink, polls: 1)
        #expect(sink.events.count == 1)
        let later = try await h.bodies("getUpdates")
        #expect(later[polls.count]["offset"] == 11)
        #expect(try await h.bodies("answerCallbackQuery").count == 1)

        // The other button of the same message no longer approves anything.
        try await h.route(
            "getUpdates",
            [updates([callbackUpdate(11, query: "q2", data: deny, chat: 1001, messageId: 55)]), noUpdates()])
        try await h.receive(into: sink, polls: 2)
        #expect(sink.events.count == 1)
        #expect(try await h.bodies("answerCallbackQuery").last?["text"] == "This request has expired.")
        #expect(try h.state.value(forKey: "updates:offset") == Array("12".utf8))
        h.expectNoTokenInLogs()
    }

    @Test func unknownStaleAndUnrecordableCallbacksAreExpired() async throws {
        let h = try await Harness.make(callbackTTL: .seconds(3600))
        try await h.route("sendMessage", [sent(messageId: 55, chat: 1001)])
        _ = await h.channel.deliver(DeliveryRequest(notification: permission, targets: [target(device())]))
        let row = try #require(
            try await h.bodies("sendMessage").first?["reply_markup"]?["inline_keyboard"]?.arrayValue?.first?.arrayValue)
        let allow = try #require(row[0]["callback_data"]?.stringValue)
        try await h.route("answerCallbackQuery", [ok("true")])
        try await h.route("editMessageText", [ok("true")])

        // Unknown data.
        try await h.route(
            "getUpdates",
            [updates([callbackUpdate(1, query: "qa", data: "bogusbogus12", chat: 1001, messageId: 55)]), noUpdates()])
        let sink = RecordingSink(known: ["n-perm"])
        try await h.receive(into: sink, polls: 2)
        #expect(sink.events.isEmpty)
        #expect(
            try await h.bodies("answerCallbackQuery").map { $0["text"]?.stringValue } == ["This request has expired."])

        // The notification is unknown to the router: answered expired, nothing recorded.
        let unknownSink = RecordingSink(known: [])
        try await h.route(
            "getUpdates",
            [updates([callbackUpdate(2, query: "qb", data: allow, chat: 1001, messageId: 55)]), noUpdates()])
        try await h.receive(into: unknownSink, polls: 2)
        #expect(unknownSink.events.isEmpty)
        #expect(try await h.bodies("answerCallbackQuery").last?["text"] == "This request has expired.")
        #expect(try await h.bodies("editMessageText").isEmpty)

        // A stale button (past callback-ttl) approves nothing.
        try await h.route("sendMessage", [sent(messageId: 56, chat: 1001)])
        let n2 = HeraldNotification(
            id: "n-stale", title: "t", actions: [NotificationAction(id: "approve", title: "Allow")])
        _ = await h.channel.deliver(DeliveryRequest(notification: n2, targets: [target(device())]))
        let stale = try #require(
            try await h.bodies("sendMessage").last.flatMap(firstCallback))
        h.clock.advance(by: .seconds(7200))
        try await h.route(
            "getUpdates",
            [updates([callbackUpdate(3, query: "qc", data: stale, chat: 1001, messageId: 56)]), noUpdates()])
        let staleSink = RecordingSink(known: ["n-stale"])
        try await h.receive(into: staleSink, polls: 2)
        #expect(staleSink.events.isEmpty)
        #expect(try await h.bodies("answerCallbackQuery").last?["text"] == "This request has expired.")
        #expect(try await h.bodies("answerCallbackQuery").count == 3)
        h.expectNoTokenInLogs()
    }

    @Test func callbackFromAnotherChatIsRefused() async throws {
        let h = try await Harness.make()
        try await h.route("sendMessage", [sent(messageId: 55, chat: 1001)])
        _ = await h.channel.deliver(DeliveryRequest(notification: permission, targets: [target(device())]))
        let allow = try #require(
            try await h.bodies("sendMessage").first.flatMap(firstCallback))
        try await h.route("answerCallbackQuery", [ok("true")])
        try await h.route("editMessageText", [ok("true")])
        try await h.route(
            "getUpdates",
            [
                updates([
                    callbackUpdate(20, query: "evil", data: allow, chat: 666, messageId: 55),
                    callbackUpdate(21, query: "good", data: allow, chat: 1001, messageId: 55),
                ]), noUpdates(),
            ])
        let sink = RecordingSink(known: ["n-perm"])
        try await h.receive(into: sink, polls: 2)
        // The foreign press recorded nothing and did not use up the button.
        #expect(sink.events.count == 1)
        #expect(sink.events.first?.actionData["chatId"] == "1001")
        let answers = try await h.bodies("answerCallbackQuery")
        #expect(answers.count == 2)
        #expect(answers[0]["callback_query_id"] == "evil")
        #expect(answers[0]["text"] == "This button is not valid in this chat.")
        #expect(answers[1]["callback_query_id"] == "good")
        #expect(try await h.bodies("editMessageText").count == 1)
    }

    @Test func floodLimitDefersTheSecondMessageToAChat() async throws {
        let h = try await Harness.make()
        try await h.route(
            "sendMessage",
            [
                sent(messageId: 1, chat: 1001), sent(messageId: 2, chat: 1001), sent(messageId: 3, chat: 2002),
                .json(
                    429,
                    #"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 30","parameters":{"retry_after":30}}"#
                ),
            ])
        let start = h.clock.now()
        let first = await h.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(id: "a", title: "a"), targets: [target(device())]))
        #expect(first.first?.outcome == .delivered)
        #expect(h.clock.now() == start)
        let second = await h.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(id: "b", title: "b"), targets: [target(device())]))
        #expect(second.first?.outcome == .delivered)
        // The second message waited for the chat's bucket (ManualClock.sleep advances time).
        #expect(h.clock.now().timeIntervalSince(start) >= 1)
        #expect(h.clock.now().timeIntervalSince(start) < 2)
        // Another chat is not held back.
        let before = h.clock.now()
        let other = await h.channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(id: "c", title: "c"), targets: [target(device("b", chat: 2002))])
        )
        #expect(other.first?.outcome == .delivered)
        #expect(h.clock.now() == before)

        // A 429 pauses the chat: retry with retry_after, and the next send is deferred without a request.
        h.clock.advance(by: .seconds(5))
        let limited = await h.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(id: "d", title: "d"), targets: [target(device())]))
        #expect(limited.first?.outcome == .retry)
        #expect(limited.first?.retryAfter == .seconds(30))
        #expect(limited.first?.status == 429)
        let deferred = await h.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(id: "e", title: "e"), targets: [target(device())]))
        #expect(deferred.first?.outcome == .retry)
        #expect(deferred.first?.retryAfter == .seconds(30))
        #expect(try await h.bodies("sendMessage").count == 4)
        #expect(try h.state.value(forKey: "rate:chat:1001") != nil)
        #expect(try h.state.value(forKey: "rate:global") != nil)
    }

    @Test func errorOutcomes() async throws {
        let h = try await Harness.make()
        func attempt(_ response: ScriptedResponse, chat: Int64) async throws -> DeliveryResult {
            try await h.route("sendMessage", [response])
            let results = await h.channel.deliver(
                DeliveryRequest(
                    notification: permission, targets: [target(device("dev\(chat)", chat: .number(Double(chat))))]))
            return try #require(results.first)
        }
        func error(_ code: Int, _ description: String, _ extra: String = "") -> ScriptedResponse {
            .json(code, #"{"ok":false,"error_code":\#(code),"description":"\#(description)"\#(extra)}"#)
        }

        let blocked = try await attempt(error(403, "Forbidden: bot was blocked by the user"), chat: 1)
        #expect(blocked.outcome == .dead)
        #expect(blocked.status == 403)
        #expect(blocked.reason == "403: Forbidden: bot was blocked by the user")
        #expect(blocked.deviceId == "dev1")

        let notFound = try await attempt(error(400, "Bad Request: chat not found"), chat: 2)
        #expect(notFound.outcome == .dead)

        let kicked = try await attempt(error(403, "Forbidden: bot was kicked from the group chat"), chat: -3)
        #expect(kicked.outcome == .dead)

        let limited = try await attempt(
            error(429, "Too Many Requests: retry after 5", #","parameters":{"retry_after":5}"#), chat: 4)
        #expect(limited.outcome == .retry)
        #expect(limited.retryAfter == .seconds(5))

        let server = try await attempt(
            .json(502, #"{"ok":false,"error_code":502,"description":"Bad Gateway"}"#), chat: 5)
        #expect(server.outcome == .retry)
        #expect(server.status == 502)

        let other = try await attempt(error(400, "Bad Request: message is too long"), chat: 6)
        #expect(other.outcome == .failed)
        #expect(other.reason == "400: Bad Request: message is too long")

        let migrated = try await attempt(
            error(
                400, "Bad Request: group chat was upgraded to a supergroup chat",
                #","parameters":{"migrate_to_chat_id":-1001234567890}"#), chat: -7)
        #expect(migrated.outcome == .failed)
        #expect(migrated.reason?.contains("-1001234567890") == true)

        let unauthorized = try await attempt(error(401, "Unauthorized"), chat: 8)
        #expect(unauthorized.outcome == .failed)
        #expect(unauthorized.reason == "bot token rejected (401)")
        #expect(unauthorized.status == 401)
        let errors = h.logs.all.filter { $0.level == .error }
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("bot token rejected (401)") == true)

        // Failed sends leave no callback records behind (only rate buckets, gc bookkeeping).
        #expect(h.state.keys.filter { $0.hasPrefix("cb:") || $0.hasPrefix("kb:") }.isEmpty)
        h.expectNoTokenInLogs()
    }

    @Test func rejectedTokenFailsTheWholeBatchAndLogsOnce() async throws {
        let h = try await Harness.make()
        try await h.route("sendMessage", [.json(401, #"{"ok":false,"error_code":401,"description":"Unauthorized"}"#)])
        let targets = (1...40).map { target(device("d\($0)", chat: .number(Double($0))), "x\($0)") }
        let results = await h.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(id: "bad", title: "t"), targets: targets))
        #expect(results.count == 40)
        #expect(results.allSatisfy { $0.outcome == .failed && $0.reason == "bot token rejected (401)" })
        #expect(h.logs.all.filter { $0.level == .error }.count == 1)
        #expect(try await h.bodies("sendMessage").count < 40)
        h.expectNoTokenInLogs()
    }

    @Test func transportErrorIsRetryAndTokenStaysOutOfLogsAndReasons() async throws {
        let h = try await Harness.make(api: "https://127.0.0.1:1")
        try await h.route("", [.error(.connectFailed, "connection refused")])  // nothing listens there
        let results = await h.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(id: "t", title: "t"), targets: [target(device())]))
        #expect(results.first?.outcome == .retry)
        #expect(results.first?.reason?.contains(token) == false)
        // receive backs off on transport errors (ManualClock sleeps return at once) and stops on cancel.
        let task = Task { await h.channel.receive(into: RecordingSink(known: [])) }
        let deadline = Date().addingTimeInterval(30)
        while !h.logs.text.contains("getUpdates failed"), Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        task.cancel()
        await task.value
        #expect(h.logs.text.contains("getUpdates failed"))
        h.expectNoTokenInLogs()
    }

    @Test func staticChatsGetTheFirstBatchOnly() async throws {
        let h = try await Harness.make(chatIds: ["-100500", "1001"])
        try await h.route("sendMessage", [sent(messageId: 9, chat: 1001)])
        let n = HeraldNotification(id: "static-1", title: "hello")
        let results = await h.channel.deliver(DeliveryRequest(notification: n, targets: [target(device())]))
        #expect(results.count == 1)
        #expect(results.first?.deviceId == "tg-alice")
        let chats = try await h.bodies("sendMessage").compactMap { $0["chat_id"]?.intValue }.sorted()
        #expect(chats == [-100_500, 1001])
        // A retry (or a second batch) of the same notification does not resend to the static chats.
        _ = await h.channel.deliver(DeliveryRequest(notification: n, targets: [target(device("b", chat: 2002), "d2")]))
        let after = try await h.bodies("sendMessage").compactMap { $0["chat_id"]?.intValue }
        #expect(after.count == 3)
        #expect(after.last == 2002)
        #expect(h.logs.text.contains("static chat delivered"))
    }

    /// The `telegram` descriptor checks the chat id once (the channel no longer checks it again).
    @Test func validatesRegistrations() throws {
        let registry = ChannelRegistry(TelegramChannel.factory)
        #expect(try registry.validate(device(chat: -1_001_234_567_890)).address == "telegram:-1001234567890")
        #expect(try registry.validate(device(chat: "@alerts_channel")).address == "telegram:@alerts_channel")
        #expect(throws: ValidationError.self) { _ = try registry.validate(device(chat: "not a chat")) }
        #expect(throws: ValidationError.self) { _ = try registry.validate(device(chat: 9_007_199_254_740_993)) }
    }

    @Test func registeredInHeraldChannels() {
        #expect(HeraldChannels.factories.contains { $0.type == "telegram" })
        #expect(TelegramChannel.factory.type == "telegram")
        #expect(TelegramChannel.factory.defaultPlatforms == ["telegram"])
    }
}
