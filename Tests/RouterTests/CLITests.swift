import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import RouterTesting
import Testing

/// Runs the real `herald` binary in a temporary HERALD_HOME.
struct CLI {
    let home: String
    let config: String

    /// The `herald` built beside this test bundle, so a build in another folder (`make test-tsan`
    /// uses `.build-tsan`) runs its own binary; `.build/debug/herald` when that cannot be told.
    static var binary: String {
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() {
            let beside = bundle.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/herald").path
    }

    init(configText: String) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        config = home + "/herald.yaml"
        try configText.write(toFile: config, atomically: true, encoding: .utf8)
    }

    typealias Result = Subprocess.Result

    func run(_ args: [String], stdin: String? = nil, env: [String: String] = [:]) throws -> Result {
        let environment = ["HERALD_HOME": home, "HERALD_CONFIG": config].merging(env) { _, given in given }
        return try Subprocess.run(executable: CLI.binary, arguments: args, stdin: stdin, environment: environment)
    }

    /// Starts `herald` alongside the test (a `run` worker, a `send` to kill mid-way), with this HERALD_HOME.
    func launch(_ args: [String]) throws -> RunningSubprocess {
        try Subprocess.launch(executable: CLI.binary, arguments: args, environment: ["HERALD_HOME": home])
    }
}

@Suite(.serialized, .stopsFakeHTTPServers) struct CLITests {
    static let secret = "whsec_" + Base64.encode(Array("0123456789abcdef0123456789abcdef".utf8))

    static func config(url: String, ca: String) -> String {
        """
        version: 1
        store: { path: ./herald.db }
        tls: { ca-file: \(ca) }
        channels:
          audit:
            type: webhook
            url: \(url)/hooks/notify
            secret: ${AUDIT_SECRET}
            retry: { attempts: 3, initial: 1s, max: 2s }
          console:
            type: log
            path: ./deliveries.jsonl
        routes:
          default:
            - deliver: [audit]
            - deliver: [console]
              unless-delivered: [audit]
        """
    }

    @Test func endToEndSendThroughSignedWebhook() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/hooks/notify", [FakeHTTPResponse(status: 204)])
        let cli = try CLI(configText: Self.config(url: server.baseURL, ca: server.caFile))
        let env = ["AUDIT_SECRET": Self.secret]

        let v = try cli.run(["validate"], env: env)
        #expect(v.code == 0, "\(v.stderr)")
        #expect(v.stdout == "ok: 2 channels, 1 routes\n")

        let notification =
            #"{"id":"n-1","type":"permission-request","title":"Permission Request","body":"Claude Bash: rm -rf build","data":{"sessionId":"5f0c"}}"#
        let sent = try cli.run(["send", "--format", "json"], stdin: notification, env: env)
        #expect(sent.code == 0, "\(sent.stderr)")
        let report = try JSONValue.parse(sent.stdout)
        #expect(report["id"] == "n-1")
        let deliveries = try #require(report["deliveries"]?.arrayValue)
        #expect(deliveries.count == 2)
        #expect(deliveries[0]["channel"] == "audit")
        #expect(deliveries[0]["outcome"] == "delivered")
        #expect(deliveries[0]["status"] == 204)
        #expect(deliveries[1]["outcome"] == "suppressed")
        #expect(deliveries[1]["reason"] == "unless-delivered: audit")

        // The receiver verifies the Standard Webhooks signature independently (Python hmac).
        let requests = try await server.requests()
        let r = try #require(requests.first)
        let id = try #require(r.header("webhook-id"))
        let ts = try #require(r.header("webhook-timestamp"))
        let sig = try #require(r.header("webhook-signature"))
        let script = """
            import base64, hashlib, hmac, sys
            secret, msg_id, ts, sig, body = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.stdin.buffer.read()
            key = base64.b64decode(secret[len("whsec_"):])
            expected = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()).decode()
            sys.exit(0 if sig == "v1," + expected else 1)
            """
        let check = try Subprocess.run(
            executable: "python3", arguments: ["-c", script, Self.secret, id, ts, sig], stdin: r.body)
        #expect(check.code == 0, "signature did not verify \(check.stderr)")
        let body = try JSONValue.parse(r.body)
        #expect(body["title"] == "Permission Request")
        #expect(body["data"]?["sessionId"] == "5f0c")

        let history = try cli.run(["history", "--format", "json", "--id", "n-1"], env: env)
        #expect(history.code == 0)
        let entries = try JSONValue.parse(history.stdout).arrayValue ?? []
        #expect(entries.count == 1)
        #expect(entries.first?["deliveries"]?.arrayValue?.count == 2)
        // Secrets never appear in output.
        #expect(!sent.stdout.contains(Self.secret) && !sent.stderr.contains(Self.secret))
    }

    @Test func receiverDownQueuesRetryAndDrainDelivers() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/hooks/notify", [FakeHTTPResponse(status: 503), FakeHTTPResponse(status: 200)])
        let cli = try CLI(configText: Self.config(url: server.baseURL, ca: server.caFile))
        let env = ["AUDIT_SECRET": Self.secret]
        let sent = try cli.run(["send", "--format", "json", "--json", #"{"title":"t"}"#], env: env)
        #expect(sent.code == 0)
        let report = try JSONValue.parse(sent.stdout)
        #expect(report["deliveries"]?[safe: 0]?["outcome"] == "retry")
        // The console step ran: the webhook retry did not count as delivered.
        #expect(report["deliveries"]?[safe: 1]?["outcome"] == "delivered")
        let drained = try cli.run(["drain", "--until-empty", "--timeout", "30", "--format", "json"], env: env)
        #expect(drained.code == 0, "\(drained.stderr)")
        #expect(try JSONValue.parse(drained.stdout)["remaining"] == 0)
        let requests = try await server.requests()
        #expect(requests.count == 2)
        #expect(requests[0].header("webhook-id") == requests[1].header("webhook-id"))
    }

    /// Issue 15 item 1: a receiver answering 429 with `Retry-After: 99999999999999999` used to trap the
    /// process (Double → Int64). The delivery is now a retry one day out, and later drains do not die on it.
    @Test(arguments: [429, 503]) func hugeRetryAfterIsARetryNotACrash(_ status: Int) async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route(
            "/hooks/notify", [FakeHTTPResponse(status: status, headers: ["retry-after": "99999999999999999"])])
        let cli = try CLI(configText: Self.config(url: server.baseURL, ca: server.caFile))
        let env = ["AUDIT_SECRET": Self.secret]
        let sent = try cli.run(["send", "--format", "json", "--json", #"{"id":"n-huge","title":"t"}"#], env: env)
        #expect(sent.code == 0, "\(sent.stderr)")
        let report = try JSONValue.parse(sent.stdout)
        let audit = try #require(report["deliveries"]?[safe: 0])
        #expect(audit["outcome"] == "retry")
        #expect(audit["status"] == .number(Double(status)))
        // Due again in one day (RetryAfter.maximum), not in 3 billion years.
        let next = try #require(audit["nextAttemptAt"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(abs(next.timeIntervalSinceNow - 86_400) < 300)
        let drained = try cli.run(["drain", "--format", "json"], env: env)
        #expect(drained.code == 0, "\(drained.stderr)")
        let history = try cli.run(["history", "--format", "json", "--id", "n-huge"], env: env)
        #expect(history.code == 0, "\(history.stderr)")
        let entry = try #require(JSONValue.parse(history.stdout).arrayValue?.first)
        let delivery = try #require(entry["deliveries"]?.arrayValue?.first { $0["channel"] == "audit" })
        #expect(delivery["outcome"] == "retry")
        #expect(try await server.requests().count == 1)
    }

    /// Issue 15 item 10: a Bot API endpoint (or a proxy in front of it) answering 502 with an HTML page
    /// that echoes the request path used to put the bot token into the delivery reason, and so into the
    /// `send` output, `history` and the store. It appears nowhere now, in no encoding.
    @Test func echoedBotTokenIsScrubbedEverywhere() async throws {
        let server = try await FakeHTTPServer.start()
        let page = "<html><body><h1>502 Bad Gateway</h1><p>upstream failed for {{path}}</p></body></html>"
        try await server.route(
            "/", [FakeHTTPResponse(status: 502, headers: ["content-type": "text/html"], body: Array(page.utf8))])
        let token = "7341234567:AAHsecretPartOfTheBotTokenXYZ0123456789"
        let secretPart = "AAHsecretPartOfTheBotTokenXYZ0123456789"
        let cli = try CLI(
            configText: """
                version: 1
                store: { path: ./herald.db }
                tls: { ca-file: \(server.caFile) }
                channels:
                  tg:
                    type: telegram
                    bot-token: ${TG_TOKEN}
                    api: \(server.baseURL)
                    retry: { attempts: 1 }
                routes:
                  default:
                    - deliver: [tg]
                """)
        let env = ["TG_TOKEN": token]
        let reg = try cli.run(
            ["devices", "register"], stdin: #"{"deviceId":"me","platform":"telegram","chatId":424242}"#, env: env)
        #expect(reg.code == 0, "\(reg.stderr)")
        let sent = try cli.run(["send", "--format", "json", "--json", #"{"id":"n-tg","title":"t"}"#], env: env)
        #expect(sent.code == 0, "\(sent.stderr)")
        // The fake really echoed the token: the request path carried it.
        let requests = try await server.requests()
        #expect(requests.contains { $0.path.contains(secretPart) })
        let report = try JSONValue.parse(sent.stdout)
        let reason = try #require(report["deliveries"]?[safe: 0]?["reason"]?.stringValue)
        #expect(reason.contains("‹redacted›"), "\(reason)")
        #expect(reason.contains("502"), "\(reason)")
        let history = try cli.run(["history", "--format", "json", "--id", "n-tg"], env: env)
        #expect(history.code == 0)
        #expect(history.stdout.contains("‹redacted›"))
        let text = try cli.run(["history", "--id", "n-tg"], env: env)
        let store = try Data(contentsOf: URL(fileURLWithPath: cli.home + "/herald.db"))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: cli.home + "/herald.db-wal"))) ?? Data()
        for leak in [secretPart, String(secretPart.prefix(20)), "7341234567%3A"] {
            for (name, output) in [
                ("send stdout", sent.stdout), ("send stderr", sent.stderr), ("history json", history.stdout),
                ("history", text.stdout + text.stderr),
            ] {
                #expect(!output.contains(leak), "\(name) leaks \(leak)")
            }
            #expect(store.range(of: Data(leak.utf8)) == nil, "the store file leaks \(leak)")
            #expect(wal.range(of: Data(leak.utf8)) == nil, "the store's WAL leaks \(leak)")
        }
    }

    @Test func devicesAndExitCodes() throws {
        let cli = try CLI(
            configText: """
                version: 1
                store: { path: ./herald.db }
                channels:
                  console: { type: log, path: ./out.jsonl, platforms: [] }
                routes:
                  default:
                    - deliver: [console]
                """)
        #expect(try cli.run(["validate"]).code == 0)
        #expect(try cli.run(["frobnicate"]).code == 2)
        #expect(try cli.run(["send"], stdin: #"{"title": 5}"#).code == 65)
        let bad = try cli.run(["send", "--json", #"{"body":"x","severity":"loud"}"#])
        #expect(bad.code == 65)
        #expect(bad.stderr.contains("severity"))
        // No channel serves phones in this config: stored with a warning (issue 14 §3), secrets masked.
        let reg = try cli.run(
            ["devices", "register"], stdin: #"{"deviceId":"p","platform":"phone","token":"secret-token-123456789"}"#)
        #expect(reg.code == 0)
        #expect(reg.stderr.contains("unreachable: no channel in the config serves platform 'phone'"))
        let list = try cli.run(["devices", "list", "--format", "json"])
        #expect(list.code == 0)
        #expect(!list.stdout.contains("secret-token-123456789"))
        #expect(list.stdout.contains(#""unreachable":"no channel in the config serves platform 'phone'""#))
        let broken = try CLI(
            configText: "version: 1\nchannels:\n  c: { type: log }\nroutes:\n  default:\n    - deliver: [nope]\n")
        let v = try broken.run(["validate"])
        #expect(v.code == 65)
        #expect(v.stderr.contains("herald.yaml:6:17: unknown channel 'nope'"))
        let graph = try cli.run(["graph", "--format", "mermaid"])
        #expect(graph.code == 0)
        #expect(graph.stdout.hasPrefix("flowchart LR"))
    }

    @Test func hapiConfigValidatesWithCredentials() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let cli = try CLI(configText: "")
        func openssl(_ args: [String]) throws {
            let r = try Subprocess.run(executable: "openssl", arguments: args)
            #expect(r.code == 0, "openssl \(args): \(r.stderr)")
        }
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", cli.home + "/rsa.pem"])
        try openssl([
            "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", cli.home + "/AuthKey.p8",
        ])
        let sa: JSONValue = [
            "type": "service_account", "project_id": "hapi-test",
            "private_key": .string(try String(contentsOfFile: cli.home + "/rsa.pem", encoding: .utf8)),
            "client_email": "hapi@hapi-test.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        try sa.canonicalString.write(toFile: cli.home + "/service-account.json", atomically: true, encoding: .utf8)
        let env = [
            "APNS_KEY_ID": "ABC123DEFG", "APNS_TEAM_ID": "TEAM123456",
            "TELEGRAM_BOT_TOKEN": "123456789:AAHtestTokenValue_abcdefghijklmnopq",
        ]
        let r = try cli.run(["validate", "-c", root.appendingPathComponent("config/hapi.yaml").path], env: env)
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout == "ok: 5 channels, 1 routes\n")
        // Without the Telegram token the error names the position and the variable.
        let missing = try cli.run(
            ["validate", "-c", root.appendingPathComponent("config/hapi.yaml").path],
            env: ["APNS_KEY_ID": "A", "APNS_TEAM_ID": "T", "TELEGRAM_BOT_TOKEN": ""])
        #expect(missing.code == 65)
        #expect(missing.stderr.contains("environment variable TELEGRAM_BOT_TOKEN is not set"))
    }

    @Test func exampleConfigValidates() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        for name in ["herald.example.yaml"] {
            let path = root.appendingPathComponent("config/\(name)").path
            let cli = try CLI(configText: "")
            let r = try cli.run(["validate", "-c", path])
            #expect(r.code == 0, "\(name): \(r.stderr)")
        }
    }
}

extension JSONValue {
    subscript(safe index: Int) -> JSONValue? {
        guard let a = arrayValue, a.indices.contains(index) else { return nil }
        return a[index]
    }
}

@Suite(.serialized) struct WorkerCLITests {
    @Test func runReloadsOnSIGHUPAndStopsOnSIGTERM() async throws {
        let good =
            "version: 1\nstore: { path: ./herald.db }\nchannels:\n  c: { type: log, path: ./out.jsonl }\nroutes:\n  default:\n    - deliver: [c]\n"
        let cli = try CLI(configText: good)
        // stderr is collected in the background, so that waiting for a line never blocks on a read.
        let worker = try cli.launch(["run", "-c", cli.config])
        #expect(try await worker.waitForStderr("running").contains("running"))
        try "version: 1\nchannels: [broken\n".write(toFile: cli.config, atomically: true, encoding: .utf8)
        worker.send(SIGHUP)
        #expect(try await worker.waitForStderr("reload refused").contains("herald.yaml:3:1"))
        try good.write(toFile: cli.config, atomically: true, encoding: .utf8)
        worker.send(SIGHUP)
        #expect(try await worker.waitForStderr("reloaded").contains("herald: reloaded"))
        worker.send(SIGTERM)
        var ended = try await worker.waitForExit()
        if ended == nil {
            Issue.record("herald run did not stop on SIGTERM")
            ended = try await worker.kill()
        }
        let exit = try #require(ended)
        #expect(exit.stderr.contains("herald: stopped"))
        #expect(exit.code == 0 && !exit.terminatedBySignal)
    }
}
