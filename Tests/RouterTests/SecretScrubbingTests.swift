import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// A channel whose provider echoes everything it was sent: its config token, the device's secret
/// fields and a token it obtained at run time.
private struct EchoingChannel: Channel {
    let apiToken: String
    static let obtainedToken = "ya29.obtained-at-runtime-access-token"

    static let factory = ChannelFactory(type: "echo", defaultPlatforms: ["phone"]) { config, _ throws(ConfigError) in
        EchoingChannel(apiToken: try config.requiredString("api-token"))
    }

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        request.targets.map { t in
            let pushKey = t.device?.string("pushKey") ?? ""
            let token = t.device?.string("token") ?? ""
            let echo =
                "502 <p>POST /send?key=\(apiToken) device=\(token) pushKey=\(pushKey) auth=\(Self.obtainedToken)</p>"
            var r = DeliveryResult.failed(t, status: 502, reason: echo)
            r.details = ["body": echo, "encoded": apiToken.replacingOccurrences(of: ":", with: "%3A")]
            return r
        }
    }

    var secrets: [String] { [Self.obtainedToken] }
}

/// Issue 15 item 10: the router scrubs every known secret from results before storing or reporting them,
/// for every channel (the choke point wraps each configured channel).
@Suite struct SecretScrubbingTests {
    @Test func configDeviceAndChannelSecretsNeverReachReportHistoryOrStore() async throws {
        let path = Harness.tempPath()
        let apiToken = "tok:live-7f3a9c1e2b4d6f8a0c2e4a6b8d0f1a3c"
        var registry = try ChannelRegistry([])
        try registry.register(EchoingChannel.factory)
        let yaml = """
            version: 1
            store: { path: \(path) }
            channels:
              echo: { type: echo, api-token: "\(apiToken)" }
            routes:
              default:
                - deliver: [echo]
            """
        let config = try ConfigLoader.parse(yaml, registry: registry)
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(clock: ManualClock(), random: FixedRandom(), logSink: RecordingLogSink()))
        let deviceToken = "fcm-device-registration-token-0123456789"
        let pushKey = "cHVzaC1rZXktc2VjcmV0LTAxMjM0NTY3ODlhYmNkZWY="
        try await router.register(
            Device(
                deviceId: "p", platform: "phone", fields: ["token": .string(deviceToken), "pushKey": .string(pushKey)]))
        let report = try await router.send(HeraldNotification(id: "n-1", title: "t"))
        let delivery = try #require(report.deliveries.first)
        let reason = try #require(delivery.reason)
        #expect(reason.hasPrefix("502 <p>POST /send?key=‹redacted› device=‹redacted›"), "\(reason)")
        let history = try router.history(id: "n-1")
        let historyText = history.map { "\($0)" }.joined()
        await router.shutdown()
        let store = try Data(contentsOf: URL(fileURLWithPath: path))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data()
        let reportText = "\(report)"
        for secret in [
            apiToken, "live-7f3a9c1e2b4d6f8a0c2e4a6b8d0f1a3c", deviceToken, pushKey, EchoingChannel.obtainedToken,
        ] {
            #expect(!reportText.contains(secret), "the report leaks \(secret)")
            #expect(!historyText.contains(secret), "history leaks \(secret)")
            // The device's own row keeps its token and push key; the delivery rows must not.
            if secret != deviceToken && secret != pushKey {
                #expect(store.range(of: Data(secret.utf8)) == nil, "the store leaks \(secret)")
                #expect(wal.range(of: Data(secret.utf8)) == nil, "the WAL leaks \(secret)")
            }
        }
    }

    @Test func scrubCoversPercentEncodingAndPEMLines() {
        let token = "123456:ABCdefGHI"
        #expect(Redaction.scrub("GET /bot123456%3AABCdefGHI/x", secrets: [token]) == "GET /bot‹redacted›/x")
        #expect(Redaction.scrub("GET /bot123456%3aABCdefGHI/x", secrets: [token]) == "GET /bot‹redacted›/x")
        let pem =
            "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\nAwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
        let parts = Redaction.pemSecrets(pem)
        #expect(parts.contains("MIGHAgEAMBMGByqGSM49AgEGCCqGSM49"))
        #expect(
            Redaction.scrub("bad key MIGHAgEAMBMGByqGSM49AgEGCCqGSM49 here", secrets: parts)
                == "bad key ‹redacted› here")
        #expect(
            Redaction.isSecretName("bot-token") && Redaction.isSecretName("secret") && Redaction.isSecretName("api-key")
        )
        #expect(!Redaction.isSecretName("url") && !Redaction.isSecretName("public-key"))
    }

    /// The byte search that skips Foundation when a secret is absent: found at the start, the end,
    /// twice, next to non-ASCII text, and not found when only a prefix or a near miss is there.
    @Test func scrubFindsSecretsAnywhereAndLeavesNearMissesAlone() {
        let secret = "tok-ABCDEF"
        #expect(Redaction.scrub("tok-ABCDEF", secrets: [secret]) == "‹redacted›")
        #expect(Redaction.scrub("x tok-ABCDEF", secrets: [secret]) == "x ‹redacted›")
        #expect(Redaction.scrub("tok-ABCDEF✓tok-ABCDEF", secrets: [secret]) == "‹redacted›✓‹redacted›")
        #expect(Redaction.scrub("émoji 😀 tok-ABCDEF.", secrets: [secret]) == "émoji 😀 ‹redacted›.")
        #expect(Redaction.scrub("tok-ABCDE", secrets: [secret]) == "tok-ABCDE")
        #expect(Redaction.scrub("tok-ABCDEG tok-", secrets: [secret]) == "tok-ABCDEG tok-")
        #expect(Redaction.scrub("", secrets: [secret]).isEmpty)
        // A text without `%` cannot hold a percent-encoded form; one with it still gets it scrubbed.
        let url = "https://push.example/s/a b"
        #expect(Redaction.scrub("to https%3A%2F%2Fpush.example%2Fs%2Fa%20b", secrets: [url]) == "to ‹redacted›")
        #expect(Redaction.scrub("to https://push.example/s/a b!", secrets: [url]) == "to ‹redacted›!")
    }
}

/// The order secrets are scrubbed in: longest first, so a secret containing another is replaced whole.
/// The channel's secrets are ordered once per call and each device's merged in; the result must be
/// the order a stable sort of all of them gives.
@Suite struct SecretOrderTests {
    @Test func mergingDeviceSecretsGivesTheStableLongestFirstOrder() {
        let alphabet = Array("abcdé✓")
        for _ in 0..<200 {
            let word = { String((0..<Int.random(in: 0...9)).map { _ in alphabet.randomElement()! }) }
            let common = (0..<Int.random(in: 0...6)).map { _ in word() }
            let device = (0..<Int.random(in: 0...3)).map { _ in word() }
            let expected = (common + device).enumerated()
                .sorted {
                    $0.element.utf8.count != $1.element.utf8.count
                        ? $0.element.utf8.count > $1.element.utf8.count : $0.offset < $1.offset
                }
                .map(\.element)
            let ordered = SecretScrubbingChannel.longestFirst(common)
            #expect(SecretScrubbingChannel.merging(device, into: ordered) == expected)
        }
    }

    /// Secrets under four characters are left alone (they would garble any text), counted in
    /// characters, not bytes: three accented letters of two code points each stay.
    @Test func secretsUnderFourCharactersAreNotRedacted() {
        let three = "e\u{301}e\u{301}e\u{301}"
        let four = three + "x"
        #expect(Redaction.scrub("a \(three) b", secrets: [three]) == "a \(three) b")
        #expect(Redaction.scrub("a \(four) b", secrets: [four]) == "a ‹redacted› b")
        #expect(Redaction.scrub("abc", secrets: ["abc"]) == "abc")
    }

    @Test func aSecretHoldingAnotherIsRedactedWhole() {
        let ordered = SecretScrubbingChannel.longestFirst(["abcd"])
        let secrets = SecretScrubbingChannel.merging(["xxabcdxx"], into: ordered)
        #expect(secrets == ["xxabcdxx", "abcd"])
        #expect(Redaction.scrub("id xxabcdxx", secrets: secrets) == "id ‹redacted›")
    }
}
