import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The CLI end to end over stores that must not be trusted blindly, batch registration and repeated sends.
@Suite(.serialized, .stopsFakeHTTPServers) struct StoreCLITests {
    static let logConfig = """
        version: 1
        store: { path: ./herald.db }
        channels:
          console: { type: log, path: ./out.jsonl }
          chat: { type: telegram, bot-token: "123456789:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", api: "https://127.0.0.1:9" }
        routes:
          default:
            - deliver: [console]
        """

    @Test func aTruncatedStoreIsRefusedNotReinitialised() throws {
        let cli = try CLI(configText: Self.logConfig)
        let store = cli.home + "/herald.db"
        #expect(FileManager.default.createFile(atPath: store, contents: Data()))
        for args in [["devices", "list"], ["send", "--json", #"{"title":"t"}"#], ["drain"]] {
            let r = try cli.run(args)
            #expect(r.code == 1, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("\(store) is not a Herald store: the file is empty (0 bytes)"), "\(r.stderr)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: store)[.size] as? Int == 0)
        #expect(!FileManager.default.fileExists(atPath: cli.home + "/out.jsonl"))
    }

    @Test func aMultiLineRegistrationIsAllOrNothingWithTheLineNumber() throws {
        let cli = try CLI(configText: Self.logConfig)
        let input = """
            {"deviceId":"p1","platform":"telegram","chatId":101}
            {"deviceId":"p2","platform":"telegram","chatId":102}

            {"deviceId":"p3","platform":"telegram","chatId":103}
            {"deviceId":"slate","platform":"telegram","chatId":1.5}
            """
        let r = try cli.run(["devices", "register"], stdin: input)
        #expect(r.code == 65)
        #expect(r.stderr.contains("line 5: chatId:"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was stored"))
        let list = try cli.run(["devices", "list", "--format", "json"])
        #expect(list.code == 0)
        #expect(list.stdout == "[]\n")
        // CRLF line ends count the same, and blank lines before the first device count too.
        let crlf = try cli.run(
            ["devices", "register"], stdin: "\r\n" + input.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(crlf.code == 65)
        #expect(crlf.stderr.contains("line 6: chatId:"), "\(crlf.stderr)")
        #expect(try cli.run(["devices", "list", "--format", "json"]).stdout == "[]\n")
        // Without the bad line all three are stored.
        let ok = try cli.run(
            ["devices", "register", "--format", "json"],
            stdin: input.components(separatedBy: "\n").dropLast().joined(separator: "\n"))
        #expect(ok.code == 0, "\(ok.stderr)")
        #expect(try JSONValue.parse(ok.stdout).arrayValue?.count == 3)
    }

    /// The test above refuses its bad line while parsing, before the router sees any device, so it
    /// passes even when the router stores device by device. Here line 4 parses and is refused by the
    /// channel that serves it (a sealed Home Assistant relay needs the registration `secret`), after
    /// lines 1–3 were accepted: they must not be stored either.
    @Test func aLineRefusedByItsChannelStoresNoEarlierLine() throws {
        let cli = try CLI(
            configText: """
                version: 1
                store: { path: ./herald.db }
                channels:
                  ha: { type: relay, protocol: home-assistant, platforms: [mobile-app], encryption: secretbox }
                routes:
                  default:
                    - deliver: [ha]
                """)
        func device(_ id: String, secret: Bool) -> String {
            let fields: JSONValue = [
                "deviceId": .string(id), "platform": "mobile-app",
                "pushUrl": "https://mobile-apps.home-assistant.example/api/sendPush/android/v1",
                "token": .string("fcm:\(id)"),
                "registrationInfo": [
                    "appId": "io.homeassistant.companion.android", "appVersion": "2024.1", "osVersion": "34",
                ],
            ]
            guard secret, var object = fields.objectValue else { return fields.canonicalString }
            object["secret"] = .string(String(repeating: "0123456789abcdef", count: 4))
            return JSONValue.object(object).canonicalString
        }
        let good = ["h1", "h2", "h3"].map { device($0, secret: true) }
        let r = try cli.run(
            ["devices", "register"], stdin: (good + [device("h4", secret: false)]).joined(separator: "\n"))
        #expect(r.code == 65)
        #expect(r.stderr.contains("line 4: secret:"), "\(r.stderr)")
        #expect(r.stderr.contains("nothing was stored"))
        #expect(try cli.run(["devices", "list", "--format", "json"]).stdout == "[]\n")
        // The same three lines alone are stored.
        let ok = try cli.run(["devices", "register", "--format", "json"], stdin: good.joined(separator: "\n"))
        #expect(ok.code == 0, "\(ok.stderr)")
        #expect(try JSONValue.parse(ok.stdout).arrayValue?.count == 3)
    }

    @Test func aRepeatedIdPrintsTheStoredReportAndSaysSo() throws {
        let cli = try CLI(configText: Self.logConfig)
        let notification = #"{"id":"n-twice","title":"once"}"#
        let first = try cli.run(["send", "--format", "json", "--json", notification])
        #expect(first.code == 0, "\(first.stderr)")
        let again = try cli.run(["send", "--format", "json", "--json", #"{"id":"n-twice","title":"twice"}"#])
        #expect(again.code == 0, "\(again.stderr)")
        #expect(again.stderr.contains("notification n-twice was already sent; not routed again"))
        let a = try JSONValue.parse(first.stdout)
        let b = try JSONValue.parse(again.stdout)
        #expect(b["replayed"] == true)
        #expect(a["deliveries"] == b["deliveries"])
        let lines = try String(contentsOfFile: cli.home + "/out.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
        let text = try cli.run(["send", "--json", notification])
        #expect(text.code == 0)
        #expect(text.stdout.hasPrefix("notification n-twice (default)\n  console: delivered"))
    }

    @Test func aDamagedStoreStopsDrainWithExit1AndSendsNothing() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/hooks/notify", [FakeHTTPResponse(status: 503), FakeHTTPResponse(status: 200)])
        let cli = try CLI(configText: CLITests.config(url: server.baseURL, ca: server.caFile))
        let env = ["AUDIT_SECRET": CLITests.secret]
        let sent = try cli.run(["send", "--format", "json", "--json", #"{"id":"n-q","title":"t"}"#], env: env)
        #expect(sent.code == 0, "\(sent.stderr)")
        #expect(try JSONValue.parse(sent.stdout)["deliveries"]?[safe: 0]?["outcome"] == "retry")
        try damageTable("attempts", inStoreAt: cli.home + "/herald.db")
        try await Task.sleep(for: .milliseconds(2500))  // the retry (initial 1s, max 2s) is due
        for _ in 0..<2 {
            let drained = try cli.run(["drain"], env: env)
            #expect(drained.code == 1)
            #expect(
                drained.stderr.contains("cannot claim due retries in the store: \(cli.home)/herald.db"),
                "\(drained.stderr)")
            #expect(drained.stderr.contains("nothing more is sent"))
        }
        // Only the first attempt (made by send, before the damage) reached the receiver.
        #expect(try await server.requests().count == 1)
    }

    /// Runs the CLI as a user file permissions apply to: as root (which passes every `access(2)`
    /// check) through `setpriv` as `nobody`, otherwise as the current user.
    private func runUnprivileged(_ cli: CLI, _ args: [String], stdin: String? = nil) throws -> CLI.Result {
        let (executable, arguments) =
            geteuid() == 0
            ? ("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", CLI.binary] + args)
            : (CLI.binary, args)
        return try Subprocess.run(
            executable: executable, arguments: arguments, stdin: stdin,
            environment: ["HERALD_HOME": cli.home, "HERALD_CONFIG": cli.config], currentDirectory: "/")
    }

    /// A HERALD_HOME the user cannot write: reads work (the store opens read-only, `immutable`
    /// since no `-shm` can be made), writes are refused naming the file and what was refused.
    @Test(.enabled(if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aReadOnlyHomeStillServesReads() throws {
        let cli = try CLI(configText: Self.logConfig)
        let reg = try cli.run(["devices", "register"], stdin: #"{"deviceId":"p1","platform":"telegram","chatId":101}"#)
        #expect(reg.code == 0, "\(reg.stderr)")
        let sent = try cli.run(["send", "--json", #"{"id":"n-ro","title":"t"}"#])
        #expect(sent.code == 0, "\(sent.stderr)")
        // The home stays readable, not writable, for the user the commands run as.
        if geteuid() == 0 {
            #expect(chmod(cli.home, 0o755) == 0)
        } else {
            #expect(chmod(cli.home, 0o555) == 0)
            #expect(chmod(cli.home + "/herald.db", 0o444) == 0)
        }
        defer {
            chmod(cli.home, 0o755)
            chmod(cli.home + "/herald.db", 0o644)
        }
        #expect(!FileManager.default.fileExists(atPath: cli.home + "/herald.db-shm"))
        let store = cli.home + "/herald.db"
        let list = try runUnprivileged(cli, ["devices", "list"])
        #expect(list.code == 0, "\(list.stderr)")
        #expect(list.stdout.hasPrefix("default/p1 telegram"))
        let history = try runUnprivileged(cli, ["history", "--format", "json", "--id", "n-ro"])
        #expect(history.code == 0, "\(history.stderr)")
        #expect(try JSONValue.parse(history.stdout).arrayValue?.count == 1)
        let refused = try runUnprivileged(
            cli, ["devices", "register"], stdin: #"{"deviceId":"p2","platform":"telegram","chatId":102}"#)
        #expect(refused.code == 1)
        #expect(
            refused.stderr.contains(
                "cannot register devices: the store \(store) is read-only (the file is not writable)"),
            "\(refused.stderr)")
        let send = try runUnprivileged(cli, ["send", "--json", #"{"title":"t"}"#])
        #expect(send.code == 1)
        #expect(send.stderr.contains("cannot store a notification: the store \(store) is read-only"), "\(send.stderr)")
        // Nothing was written and no file was created in the home.
        #expect(try cli.run(["devices", "list", "--format", "json"]).stdout.contains("p2") == false)
    }
}
