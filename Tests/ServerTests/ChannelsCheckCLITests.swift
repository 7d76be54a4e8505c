import Foundation
import HeraldHTTPTesting
import Testing

/// Issue 34 §3: `herald channels check NAME` runs the conformance rules on a channel of the config,
/// built from its own section, over a scripted transport (nothing leaves the machine); it prints each
/// violation with what to fix and exits 1 on any.
@Suite struct ChannelsCheckCLITests {
    static func check(_ home: String, _ arguments: [String]) throws -> Subprocess.Result {
        try ServeCLITests.herald(home, ["channels", "check"] + arguments)
    }

    static let chat = #"{"deviceId":"t1","platform":"telegram","chatId":1234567}"#

    @Test func reportsEachViolationWithItsFixAndExitsNonZero() throws {
        let home = try ServeCLITests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        try """
        version: 1
        store: { path: \(home)/herald.db }
        channels:
          hooks: { type: webhook, url: "https://hooks.example/herald", secret: "whsec_c2VjcmV0LXdlYmhvb2sta2V5LTEyMzQ1Njc4OTA=" }
          bot: { type: telegram, bot-token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }
        routes:
          default:
            - deliver: [hooks, bot]
        """.write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        // A sink with a webhook-id on every request conforms.
        let hooks = try Self.check(home, ["hooks"])
        #expect(hooks.code == 0, "\(hooks.stdout)\(hooks.stderr)")
        #expect(hooks.stdout.contains("channel hooks (webhook) conforms"))
        // The Bot API has no idempotency key: checked as if it had one, every request breaks the rule,
        // and the report says what to do about it.
        let keyless = try Self.check(home, ["bot", "--devices", Self.chat])
        #expect(keyless.code == 1)
        #expect(keyless.stdout.contains("- idempotency-key: a request to"))
        #expect(keyless.stdout.contains("  fix: send the target's deliveryId as the provider's idempotency key"))
        #expect(!keyless.stdout.contains("AAAAAAAAAAAAAAAAAAAAAAAA"), "the bot token is never printed")
        // Declared as a provider without one, the channel conforms; --format json says the same.
        let declared = try Self.check(home, ["bot", "--devices", Self.chat, "--idempotency-key", "none"])
        #expect(declared.code == 0, "\(declared.stdout)\(declared.stderr)")
        let json = try Self.check(
            home, ["bot", "--devices", Self.chat, "--idempotency-key", "none", "--format", "json"])
        let o = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(o?["conforms"] as? Bool == true)
        #expect(o?["type"] as? String == "telegram")
    }

    /// `herald` built with the deliberately broken channel of the kit's tests (Tests/BrokenHerald).
    static var brokenHerald: String {
        URL(fileURLWithPath: ServeCLITests.binary).deletingLastPathComponent().appendingPathComponent("BrokenHerald")
            .path
    }

    /// Issue 34, "done when": `channels check` fails on the broken channels, each naming the rule it
    /// broke: one that logs a device secret, one that never retries, one without an idempotency
    /// key, one that answers `dead` to a 500; the unbroken one conforms.
    @Test(arguments: [
        ("logs-device-secret", "no-secret-logged"), ("never-retries", "retry-transient"),
        ("no-key", "idempotency-key"), ("dead-on-500", "dead-only-permanent"), ("", ""),
    ])
    func failsOnEachBrokenChannelWithTheRuleItBroke(breaks: String, rule: String) throws {
        let home = try ServeCLITests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        try """
        version: 1
        store: { path: \(home)/herald.db }
        channels:
          phones: { type: broken, token: tk_broken_secret_value, breaks: [\(breaks)] }
        routes:
          default:
            - deliver: [phones]
        """.write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let devices =
            #"[{"deviceId":"a","platform":"brokenphone","token":"device-token-a","appToken":"app-secret-a"},"#
            + #"{"deviceId":"b","platform":"brokenphone","token":"device-token-b","appToken":"app-secret-b"}]"#
        let r = try Subprocess.run(
            executable: Self.brokenHerald,
            arguments: [
                "channels", "check", "phones", "--devices", devices, "--format", "json", "-c", home + "/herald.yaml",
            ],
            environment: ["HERALD_HOME": home])
        let o = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let rules = Set(((o?["violations"] as? [[String: Any]]) ?? []).compactMap { $0["rule"] as? String })
        if rule.isEmpty {
            #expect(r.code == 0, "\(r.stdout)\(r.stderr)")
            #expect(o?["conforms"] as? Bool == true)
        } else {
            #expect(r.code == 1, "\(r.stdout)\(r.stderr)")
            #expect(rules == [rule], "\(r.stdout)")
        }
        #expect(!r.stdout.contains("app-secret-a") && !r.stdout.contains("tk_broken_secret_value"))
    }

    @Test func inputErrorsAreClear() throws {
        let home = try ServeCLITests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        try """
        version: 1
        store: { path: \(home)/herald.db }
        channels:
          bot: { type: telegram, bot-token: "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }
        routes:
          default:
            - deliver: [bot]
        """.write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let missing = try Self.check(home, ["nope"])
        #expect(missing.code == 65 && missing.stderr.contains("no channel 'nope' in the config (channels: bot)"))
        let noDevice = try Self.check(home, ["bot"])
        #expect(noDevice.code == 65 && noDevice.stderr.contains("give one with --devices JSON"))
        let wrongPlatform = try Self.check(
            home, ["bot", "--devices", #"{"deviceId":"p","platform":"phone","token":"x"}"#])
        #expect(
            wrongPlatform.code == 65 && wrongPlatform.stderr.contains("platform phone is not served by channel bot"))
        let badDead = try Self.check(home, ["bot", "--devices", Self.chat, "--dead", "200"])
        #expect(badDead.code == 65 && badDead.stderr.contains("--dead takes HTTP statuses"))
        let usage = try Subprocess.run(executable: ServeCLITests.binary, arguments: ["channels", "list"])
        #expect(usage.code == 2)
    }
}
