import ChannelAPI
import ChannelSupport
import Foundation
import HeraldYAML
import Router
import RouterTesting
import Testing

@testable import TelegramChannel

@Suite("Telegram pure code")
struct TelegramPureTests {
    // MARK: Escaping and layout

    @Test func escapesTheThreeCharactersAmpersandFirst() {
        #expect(TelegramText.escape("a < b & c > d") == "a &lt; b &amp; c &gt; d")
        #expect(TelegramText.escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;")
        #expect(TelegramText.escape("&amp; already") == "&amp;amp; already")
        #expect(TelegramText.escape("\"quotes\" 'stay'") == "\"quotes\" 'stay'")
        #expect(TelegramText.escape("emoji 👍🏽 ok") == "emoji 👍🏽 ok")
    }

    @Test func layoutHasBoldTitleBodyAndContext() {
        let n = HeraldNotification(
            title: "Permission <Request>", body: "Claude Bash: rm -rf build && echo ok", severity: .warning,
            url: "/sessions/5f0c", data: ["sessionName": "claude - hapi"])
        let html = TelegramText.render(TelegramMessage.spans(for: n).spans)
        #expect(
            html
                == "⚠️ <b>Permission &lt;Request&gt;</b>\nClaude Bash: rm -rf build &amp;&amp; echo ok\n\n"
                + "<i>claude - hapi</i> · /sessions/5f0c")
    }

    @Test func layoutWithoutTitleOrSeverity() {
        let n = HeraldNotification(body: "just a body")
        #expect(TelegramText.render(TelegramMessage.spans(for: n).spans) == "just a body")
        let t = HeraldNotification(title: "only title", severity: .error)
        #expect(TelegramText.render(TelegramMessage.spans(for: t).spans) == "🚨 <b>only title</b>")
    }

    @Test func lengthCountsUTF16AfterEntityParsing() {
        // "<" is one visible character although it is sent as "&lt;"; 👍 is two UTF-16 units.
        #expect(TelegramText.length([TelegramSpan("<&>"), TelegramSpan("👍", .bold)]) == 5)
    }

    @Test func exactLimitIsNotTruncated() {
        let n = HeraldNotification(body: String(repeating: "a", count: 4096))
        let (spans, truncated) = TelegramMessage.spans(for: n)
        #expect(!truncated)
        #expect(TelegramText.length(spans) == 4096)
    }

    @Test func truncationNeverSplitsAnEntityOrTagAndKeepsContext() {
        // 4095 visible characters before a run of '&': the cut lands inside "&amp;&amp;…" in the HTML.
        let body = String(repeating: "x", count: 4000) + String(repeating: "&", count: 200)
        let n = HeraldNotification(title: "T", body: body, url: "/s/1")
        let (spans, truncated) = TelegramMessage.spans(for: n)
        #expect(truncated)
        #expect(TelegramText.length(spans) <= 4096)
        let html = TelegramText.render(spans)
        #expect(html.hasPrefix("<b>T</b>\nxxx"))
        #expect(html.hasSuffix("…<i>\n(truncated)</i>\n\n/s/1"))
        // Every '&' starts a complete entity.
        let cut = html.components(separatedBy: "…")[0]
        for part in cut.components(separatedBy: "&").dropFirst() {
            #expect(part.hasPrefix("amp;"))
        }
        #expect(!cut.hasSuffix("&"))
    }

    @Test func truncationKeepsSurrogatePairsAndClusters() {
        let body = String(repeating: "👍🏽", count: 1100)  // 4 UTF-16 units each
        let (spans, truncated) = TelegramMessage.spans(for: HeraldNotification(body: body))
        #expect(truncated)
        #expect(TelegramText.length(spans) <= 4096)
        let text = spans.map(\.text).joined()
        #expect(text.unicodeScalars.allSatisfy { $0.value != 0xFFFD })
        let cutPart = spans[0].text
        #expect(cutPart.allSatisfy { $0 == "👍🏽" || $0 == "…" })
    }

    @Test func hugeTitleIsCutAtTheEnd() {
        let n = HeraldNotification(title: String(repeating: "<", count: 5000), body: "b")
        let (spans, truncated) = TelegramMessage.spans(for: n)
        #expect(truncated)
        #expect(TelegramText.length(spans) <= 4096)
        let html = TelegramText.render(spans)
        #expect(html.hasPrefix("<b>&lt;&lt;"))
        #expect(html.contains("&lt;</b>…"))
    }

    @Test func outcomeLineFitsTheReserve() {
        let line = TelegramMessage.outcomeLine(
            actionTitle: String(repeating: "Allow ", count: 100), destructive: false, by: "@user")
        #expect(TelegramText.length(line) <= TelegramMessage.outcomeReserve)
        #expect(
            TelegramText.render(TelegramMessage.outcomeLine(actionTitle: "Allow", destructive: false, by: "@u"))
                == "\n\n✅ <b>Allow</b> — by @u")
    }

    @Test func keyboardRowsAndButtons() {
        let buttons =
            (0..<4).map { TelegramButton(text: "b\($0)", kind: .callback("id\($0)")) } + [
                TelegramButton(text: "open", kind: .url("https://example.com"), destructive: true)
            ]
        let k = TelegramMessage.keyboard(buttons)
        let rows = k["inline_keyboard"]?.arrayValue ?? []
        #expect(rows.count == 2)
        #expect(rows[0].arrayValue?.count == 3)
        #expect(rows[1].arrayValue?[1] == ["text": "open", "url": "https://example.com", "style": "danger"])
        #expect(rows[0].arrayValue?[0] == ["text": "b0", "callback_data": "id0"])
    }

    // MARK: Chat ids

    @Test func chatIds() {
        #expect(TelegramChatID("-1001234567890123")?.number == -1_001_234_567_890_123)
        #expect(TelegramChatID("-1001234567890123")?.json.canonicalString == "-1001234567890123")
        #expect(TelegramChatID("@my_channel")?.json == "@my_channel")
        #expect(TelegramChatID("@bad-name") == nil)
        #expect(TelegramChatID("12ab") == nil)
        #expect(TelegramChatID("-9223372036854775808") == nil)
    }

    // MARK: Response classification

    func classify(_ status: Int, _ body: String) -> TelegramOutcome {
        TelegramOutcome.classify(TelegramResponse(status: status, body: Array(body.utf8)))
    }

    @Test func classification() {
        #expect(
            classify(200, #"{"ok":true,"result":{"message_id":77,"chat":{"id":-100123}}}"#)
                == .delivered(messageId: 77, chatId: -100_123))
        #expect(
            classify(403, #"{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}"#)
                == .dead(reason: "403: Forbidden: bot was blocked by the user"))
        #expect(
            classify(
                403,
                #"{"ok":false,"error_code":403,"description":"Forbidden: bot was kicked from the supergroup chat"}"#)
                == .dead(reason: "403: Forbidden: bot was kicked from the supergroup chat"))
        #expect(
            classify(403, #"{"ok":false,"error_code":403,"description":"Forbidden: user is deactivated"}"#)
                == .dead(reason: "403: Forbidden: user is deactivated"))
        #expect(
            classify(400, #"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#)
                == .dead(reason: "400: Bad Request: chat not found"))
        #expect(
            classify(
                429,
                #"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#
            ) == .retry(reason: "429: Too Many Requests: retry after 7", retryAfter: .seconds(7)))
        #expect(
            classify(429, #"{"ok":false,"error_code":429,"description":"Too Many Requests"}"#)
                == .retry(reason: "429: Too Many Requests", retryAfter: nil))
        #expect(
            classify(502, "<html>Bad Gateway</html>")
                == .retry(reason: "502: <html>Bad Gateway</html>", retryAfter: nil))
        // An HTTP Retry-After (a proxy's 503, or a 429 whose body lost its parameters) counts when the
        // body has no retry_after; the body's value wins when both are there.
        #expect(
            TelegramOutcome.classify(TelegramResponse(status: 503, body: Array("busy".utf8), retryAfterHeader: "4"))
                == .retry(reason: "503: busy", retryAfter: .seconds(4)))
        #expect(
            TelegramResponse(
                status: 429, body: Array(#"{"ok":false,"error_code":429,"parameters":{"retry_after":7}}"#.utf8),
                retryAfterHeader: "2"
            ).retryAfter == 7)
        #expect(
            classify(401, #"{"ok":false,"error_code":401,"description":"Unauthorized"}"#)
                == .configuration(reason: "bot token rejected (401)"))
        #expect(
            classify(400, #"{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: x"}"#)
                == .failed(reason: "400: Bad Request: can't parse entities: x"))
        guard
            case .failed(let reason) = classify(
                400,
                #"{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1009876543210}}"#
            )
        else {
            Issue.record("migration is not failed")
            return
        }
        #expect(reason.contains("-1009876543210"))
        // ok:false on HTTP 200 is not a success.
        #expect(
            classify(200, #"{"ok":false,"error_code":400,"description":"Bad Request: x"}"#)
                == .failed(reason: "400: Bad Request: x"))
    }

    // MARK: Token bucket

    @Test func tokenBucketRefillsAndPauses() {
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        var b = TelegramTokenBucket(rate: 1, capacity: 1, now: start)
        #expect(b.take(now: start) == nil)
        #expect(b.take(now: start) == .milliseconds(1000))
        #expect(b.take(now: start.addingTimeInterval(0.4)) == .milliseconds(600))
        #expect(b.take(now: start.addingTimeInterval(1)) == nil)
        b.pause(for: .seconds(30), now: start.addingTimeInterval(1))
        #expect(b.take(now: start.addingTimeInterval(5)) == .milliseconds(26_000))
        let restored = TelegramTokenBucket(stored: b.stored, rate: 1, capacity: 1, now: start)
        #expect(restored == b)
        var g = TelegramTokenBucket(rate: 30, capacity: 30, now: start)
        for _ in 0..<30 { #expect(g.take(now: start) == nil) }
        #expect(g.take(now: start) == .milliseconds(34))
    }

    // MARK: Callback records

    @Test func callbackRecordsAreUniqueAndCollectedAfterExpiry() throws {
        let state = InMemoryChannelState()
        let store = TelegramCallbackStore(state: state, random: FixedRandom(), ttl: .seconds(3600))
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        try store.collectGarbage(now: now)
        let n = HeraldNotification(
            id: "n", title: "t",
            actions: [
                NotificationAction(id: "a", title: "A"), NotificationAction(id: "b", title: "B"),
                NotificationAction(id: "u", title: "U", url: "https://example.com"),
                NotificationAction(id: "rel", title: "R", url: "/relative"),
            ])
        let chat = try #require(TelegramChatID("42"))
        let first = try store.prepare(notification: n, chat: chat, deviceId: "d", deliveryId: "x", now: now)
        let again = try store.prepare(notification: n, chat: chat, deviceId: "d", deliveryId: "x", now: now)
        #expect(first.buttons.count == 3)
        #expect(Set(first.ids + again.ids).count == 4)
        #expect(first.ids.allSatisfy { $0.utf8.count == 12 })
        try store.attach(group: first.group, ids: first.ids, messageId: 5, chat: chat, html: "<b>t</b>")
        let record = try #require(try store.lookup(first.ids[0]))
        #expect(record.notificationId == "n")
        #expect(record.actionId == "a")
        #expect(record.chat == "42")
        #expect(record.messageId == 5)
        #expect(record.expiresAt == now.millisecondsSince1970 + 3_600_000)
        #expect(try store.claim(group: first.group)?.html == "<b>t</b>")
        #expect(try store.claim(group: first.group) == nil)

        try store.collectGarbage(now: now.addingTimeInterval(1800))
        #expect(try store.lookup(first.ids[1]) != nil)
        try store.collectGarbage(now: now.addingTimeInterval(3700))
        #expect(try store.lookup(first.ids[1]) == nil)
        #expect(try store.lookup(again.ids[0]) == nil)
        #expect(state.keys.filter { !$0.hasPrefix("gc:cursor") }.isEmpty)
    }

    // MARK: Config

    func config(_ yaml: String, env: [String: String] = [:]) throws -> TelegramConfiguration {
        let node = try #require(try YAMLParser.parse(yaml))
        let config = try ChannelConfig(
            name: "telegram", node: ConfigNode(yaml: node, file: "herald.yaml", environment: env, baseDirectory: "/"),
            ignoring: ["type"])
        let parsed = try TelegramConfiguration(config: config)
        try config.finish()
        return parsed
    }

    @Test func configKeys() throws {
        let c = try config(
            """
            type: telegram
            bot-token: ${TELEGRAM_BOT_TOKEN}
            api: https://tg.example.com/
            chat-ids: [-1001234567890, "@alerts", 42]
            thread-id: 7
            silent-info: true
            poll-timeout: 10s
            callback-ttl: 1h
            """, env: ["TELEGRAM_BOT_TOKEN": "123456789:AAHfakeTokenForConfig_0123456789"])
        #expect(c.botToken == "123456789:AAHfakeTokenForConfig_0123456789")
        #expect(c.api == "https://tg.example.com")
        #expect(c.chatIds.map(\.text) == ["-1001234567890", "@alerts", "42"])
        #expect(c.threadId == 7)
        #expect(c.silentInfo)
        #expect(c.pollTimeout == .seconds(10))
        #expect(c.callbackTTL == .seconds(3600))
        let d = try config("bot-token: 1:AAAAAAAAAAAAAAAAAAAAAAAA")
        #expect(d.api == "https://api.telegram.org")
        #expect(d.pollTimeout == .seconds(25))
        #expect(d.callbackTTL == .seconds(7 * 86_400))
        #expect(!d.silentInfo)
    }

    @Test func configErrorsNamePositionAndHideToken() {
        do {
            _ = try config("api: https://x.example\n")
            Issue.record("missing bot-token accepted")
        } catch {
            #expect("\(error)".contains("bot-token"))
        }
        do {
            _ = try config("bot-token: not-a-secret-token-value\n")
            Issue.record("bad token accepted")
        } catch {
            #expect("\(error)".contains("herald.yaml:1"))
            #expect(!"\(error)".contains("not-a-secret-token-value"))
        }
        do {
            _ = try config("bot-token: 1:AAAAAAAAAAAAAAAAAAAAAAAA\nchat-ids: [abc]\n")
            Issue.record("bad chat id accepted")
        } catch {
            #expect("\(error)".contains("chat-ids"))
        }
        do {
            _ = try config("bot-token: 1:AAAAAAAAAAAAAAAAAAAAAAAA\nbogus: 1\n")
            Issue.record("unknown key accepted")
        } catch {
            #expect("\(error)".contains("bogus"))
        }
    }
}

/// Issue 15 item 1: Telegram's `retry_after` and stored bucket numbers never trap.
@Suite struct TelegramNumberClampTests {
    @Test func hugeRetryAfterIsCutToOneDay() throws {
        let body =
            #"{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":9007199254740991}}"#
        let response = TelegramResponse(status: 429, body: Array(body.utf8))
        #expect(
            TelegramOutcome.classify(response) == .retry(reason: response.reasonText, retryAfter: RetryAfter.maximum))
        let negative = #"{"ok":false,"error_code":429,"description":"x","parameters":{"retry_after":-5}}"#
        #expect(
            TelegramOutcome.classify(TelegramResponse(status: 429, body: Array(negative.utf8)))
                == .retry(reason: "429: x", retryAfter: .zero))
    }

    @Test func hugePauseAndDamagedStateDoNotTrap() {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        var b = TelegramTokenBucket(rate: 1, capacity: 1, now: now)
        b.pause(for: .seconds(Int64.max), now: now)
        #expect(b.take(now: now) == RetryAfter.maximum)
        let damaged = Array(#"{"tokens":0,"at":-1e300,"pause":1e300}"#.utf8)
        var r = TelegramTokenBucket(stored: damaged, rate: 0, capacity: 1, now: now)
        #expect(r.take(now: now) == RetryAfter.maximum)
        var z = TelegramTokenBucket(stored: Array(#"{"tokens":0,"at":1e300}"#.utf8), rate: 0, capacity: 1, now: now)
        #expect(z.take(now: now) == RetryAfter.maximum)
    }
}
