import ChannelAPI
import Foundation
import HeraldHTTPTesting
import Testing

/// Telegram webhook mode through the real `herald serve` against a fake Bot API: `setWebhook` is
/// called with a secret, `POST /v1/channels/telegram/telegram` with a wrong secret is 401 and
/// records nothing, with the right one the button press is an `action` event (seen by
/// wait-for-action), a malformed update is 422.
@Suite("Telegram webhook mode through herald serve", .serialized, .stopsFakeHTTPServers)
struct TelegramWebhookServeTests {
    static let botToken = "123456789:AAHserveWebhookBotToken_abcdefghijk"

    @Test func setWebhookThenCallbacksArriveAsActions() async throws {
        let bot = try await FakeHTTPServer.start()
        let ok = { (result: String) in FakeHTTPResponse.json(200, #"{"ok":true,"result":\#(result)}"#) }
        try await bot.route("/bot\(Self.botToken)/setWebhook", [ok("true")])
        try await bot.route(
            "/bot\(Self.botToken)/sendMessage",
            [ok(#"{"message_id":55,"chat":{"id":1001,"type":"private"},"date":1,"text":"x"}"#)])
        try await bot.route("/bot\(Self.botToken)/answerCallbackQuery", [ok("true")])
        try await bot.route("/bot\(Self.botToken)/editMessageText", [ok("true")])
        let (token, entry) = ServeProcess.token(
            name: "hub", namespaces: ["default"], scopes: ["send", "devices", "events", "read"])
        let serve = try ServeProcess { home, listen in
            """
            version: 1
            store: { path: \(home)/herald.db }
            tls: { ca-file: \(bot.caFile) }
            server:
              listen: \(listen)
              tokens:
            \(entry)
            channels:
              telegram:
                type: telegram
                bot-token: "\(Self.botToken)"
                api: "\(bot.baseURL)"
                updates: webhook
                webhook-url: https://hub.example/v1/channels/telegram/telegram
            routes:
              default:
                - deliver: [telegram]
            """
        }
        try await serve.start()
        do {
            func curl(_ arguments: [String], path: String) throws -> (body: String, status: Int) {
                let r = try Subprocess.run(
                    executable: "curl", arguments: ["-sS", "-w", "\n%{http_code}"] + arguments + [serve.baseURL + path])
                let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
                return (lines.dropLast().joined(separator: "\n"), Int(lines.last ?? "") ?? 0)
            }
            let auth = ["-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json"]

            // setWebhook, once, with the URL, a secret of the Bot API's alphabet and callback queries only.
            var calls: [RecordedRequest] = []
            let deadline = ContinuousClock.now + .seconds(20)
            while calls.isEmpty, ContinuousClock.now < deadline {
                calls = try await bot.requests().filter { $0.path.hasSuffix("/setWebhook") }
                try await Task.sleep(for: .milliseconds(50))
            }
            let setWebhook = try JSONValue.parse(try #require(calls.first).body)
            #expect(setWebhook["url"] == "https://hub.example/v1/channels/telegram/telegram")
            #expect(setWebhook["allowed_updates"] == ["callback_query"])
            let secret = try #require(setWebhook["secret_token"]?.stringValue)
            #expect(secret.range(of: "^[A-Za-z0-9_-]{1,256}$", options: .regularExpression) != nil)
            #expect(try await bot.requests().filter { $0.path.hasSuffix("/getUpdates") }.isEmpty)

            // A chat, and a notification with buttons.
            let registered = try curl(
                auth + ["-d", #"{"deviceId":"tg-alice","platform":"telegram","chatId":1001}"#], path: "/v1/devices")
            #expect(registered.status == 200, "\(registered.body)")
            let sent = try curl(
                auth + [
                    "-d",
                    #"{"id":"perm-1","title":"Permission Request","body":"Bash: ls","actions":[{"id":"approve","title":"Allow"},{"id":"deny","title":"Deny"}]}"#,
                ], path: "/v1/notifications")
            #expect(sent.status == 200, "\(sent.body)")
            let message = try JSONValue.parse(
                try #require(try await bot.requests().first { $0.path.hasSuffix("/sendMessage") }).body)
            let data = try #require(
                message["reply_markup"]?["inline_keyboard"]?.arrayValue?.first?.arrayValue?.first?["callback_data"]?
                    .stringValue)
            let update =
                #"{"update_id":77,"callback_query":{"id":"q1","from":{"id":7,"username":"alice"},"chat_instance":"c","data":"\#(data)","message":{"message_id":55,"date":1,"chat":{"id":1001,"type":"private"}}}}"#
            let hook = "/v1/channels/telegram/telegram"
            let json = ["-H", "Content-Type: application/json"]

            // Wrong or missing secret: 401, nothing recorded, Telegram not called.
            let before = try await bot.requests().count
            let wrong = try curl(json + ["-H", "X-Telegram-Bot-Api-Secret-Token: nope", "-d", update], path: hook)
            #expect(wrong.status == 401)
            #expect(try curl(json + ["-d", update], path: hook).status == 401)
            #expect(try await bot.requests().count == before)
            let none = try curl(auth, path: "/v1/notifications/perm-1/action?timeout=0")
            #expect(none.status == 204)

            // A malformed update with the right secret: 422.
            let right = ["-H", "X-Telegram-Bot-Api-Secret-Token: \(secret)"]
            #expect(try curl(json + right + ["-d", #"{"callback_query":{}}"#], path: hook).status == 422)

            // The right secret: 200, and the press is the notification's action.
            let accepted = try curl(json + right + ["-d", update], path: hook)
            #expect(accepted.status == 200, "\(accepted.body)")
            let waited = try curl(auth, path: "/v1/notifications/perm-1/action?timeout=10")
            #expect(waited.status == 200)
            let event = try JSONValue.parse(waited.body)["event"]
            #expect(event?["kind"] == "action")
            #expect(event?["actionId"] == "approve")
            #expect(event?["deviceId"] == "tg-alice")
            #expect(try await bot.requests().contains { $0.path.hasSuffix("/answerCallbackQuery") })

            // Neither the secret nor the bot token is in herald's log.
            let log = serve.process?.stderr ?? ""
            #expect(!log.contains(secret))
            #expect(!log.contains(Self.botToken))
        } catch {
            await serve.cleanUp()
            throw error
        }
        await serve.cleanUp()
    }
}
