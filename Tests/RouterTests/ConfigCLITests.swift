import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The real `herald` binary on configs with out-of-range numbers and bad bytes, offline validation,
/// and registration warnings.
@Suite(.serialized) struct ConfigCLITests {
    static let good =
        "version: 1\nstore: { path: ./herald.db }\nchannels:\n  c: { type: log, path: ./out.jsonl }\nroutes:\n  default:\n    - deliver: [c]\n"

    @Test(arguments: [
        ("    retry: { initial: 99999999999999999999 }", 5, 23),
        ("    retry: { max: 18446744073709551616 }", 5, 19),
        ("    timeout: 1e300s", 5, 14),
    ])
    func validateReportsOutOfRangeNumbers(_ line: String, _ row: Int, _ column: Int) throws {
        let yaml =
            "version: 1\nstore: { path: ./herald.db }\nchannels:\n  c:\n\(line)\n    type: log\nroutes:\n  default:\n    - deliver: [c]\n"
        let cli = try CLI(configText: yaml)
        let r = try cli.run(["validate"])
        #expect(r.code == 65, "\(r.stderr)")
        #expect(r.stderr.contains("herald.yaml:\(row):\(column): "), "\(r.stderr)")
        #expect(r.stderr.contains("out of range"), "\(r.stderr)")
    }

    @Test func validateReportsTheFirstByteThatIsNotUTF8() throws {
        let cli = try CLI(configText: "")
        var bytes = Array("version: 1\nstore: { path: ./herald.db } # d".utf8)
        bytes += [0xE9, 0x6A, 0xE0, 0x20]  // "déjà " in Latin-1
        bytes += Array("\nchannels:\n  c: { type: log }\nroutes:\n  default:\n    - deliver: [c]\n".utf8)
        _ = FileManager.default.createFile(atPath: cli.config, contents: Data(bytes))
        let r = try cli.run(["validate"])
        #expect(r.code == 65)
        #expect(r.stderr.contains("herald.yaml:2:33: the config is not valid UTF-8: byte 0xE9"), "\(r.stderr)")
    }

    @Test func sighupWithAnOutOfRangeNumberKeepsTheWorkerRunning() async throws {
        let cli = try CLI(configText: Self.good)
        let worker = try cli.launch(["run", "-c", cli.config])
        #expect(try await worker.waitForStderr("running").contains("running"))
        let broken = [
            "    retry: { initial: 99999999999999999999 }", "    retry: { max: 18446744073709551616 }",
            "    timeout: 1e300s",
        ]
        for (i, line) in broken.enumerated() {
            let yaml =
                "version: 1\nstore: { path: ./herald.db }\nchannels:\n  c:\n    type: log\n\(line)\nroutes:\n  default:\n    - deliver: [c]\n"
            try yaml.write(toFile: cli.config, atomically: true, encoding: .utf8)
            worker.send(SIGHUP)
            let seen = try await worker.waitForStderr("reload refused", occurrences: i + 1)
            #expect(seen.components(separatedBy: "reload refused").count == i + 2, "\(seen)")
            #expect(worker.isRunning, "herald run died on SIGHUP with \(line)")
        }
        #expect(worker.stderr.contains("herald.yaml:6:14: timeout is out of range"))
        try Self.good.write(toFile: cli.config, atomically: true, encoding: .utf8)
        worker.send(SIGHUP)
        #expect(try await worker.waitForStderr("reloaded").contains("herald: reloaded"))
        worker.send(SIGTERM)
        var ended = try await worker.waitForExit()
        if ended == nil {
            Issue.record("herald run did not stop on SIGTERM")
            ended = try await worker.kill()
        }
        let exit = try #require(ended)
        #expect(!exit.terminatedBySignal)
        #expect(exit.code == 0)
    }

    @Test func aDeviceNoChannelServesIsStoredWithAWarning() throws {
        let cli = try CLI(configText: Self.good)
        let device = #"{"deviceId":"pixel","platform":"phone","token":"fcm-token-1"}"#
        let reason = "no channel in the config serves platform 'phone'"
        let r = try cli.run(["devices", "register", "--json", device])
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout == "registered default/pixel (phone)\n")
        #expect(r.stderr == "herald: warning: device default/pixel (phone) is unreachable: \(reason)\n")
        let j = try cli.run(["devices", "register", "--format", "json", "--json", device])
        #expect(j.code == 0, "\(j.stderr)")
        let entry = try JSONValue.parse(j.stdout)[safe: 0]
        #expect(entry?["channels"] == [])
        #expect(entry?["warnings"] == [.string("warning: device default/pixel (phone) is unreachable: \(reason)")])

        let list = try cli.run(["devices", "list"])
        #expect(list.stdout.contains("default/pixel phone"), "\(list.stdout)")
        #expect(list.stdout.contains(" — unreachable: \(reason)"), "\(list.stdout)")
        let listJSON = try JSONValue.parse(try cli.run(["devices", "list", "--format", "json"]).stdout)
        #expect(listJSON[safe: 0]?["unreachable"] == .string(reason))

        let explain = try cli.run(["explain", "--namespace", "default", "--type", "ready"])
        #expect(explain.code == 0, "\(explain.stderr)")
        #expect(explain.stdout.contains("unreachable: pixel (phone): \(reason)"), "\(explain.stdout)")
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// No production secrets: the variables the shipped configs name are empty (= unset).
    static let noSecrets = [
        "APNS_KEY_ID": "", "APNS_TEAM_ID": "", "TELEGRAM_BOT_TOKEN": "", "AUDIT_WEBHOOK_SECRET": "",
    ]

    @Test(arguments: ["hapi.yaml", "herald.example.yaml"])
    func shippedConfigsValidateOffline(_ name: String) throws {
        // HERALD_HOME is an empty directory: no service-account.json, no AuthKey.p8.
        let cli = try CLI(configText: "")
        let path = Self.root.appendingPathComponent("config/\(name)").path
        let r = try cli.run(["validate", "--offline", "-c", path], env: Self.noSecrets)
        #expect(r.code == 0, "\(name): \(r.stderr)")
        #expect(r.stdout.hasPrefix("ok: "), "\(name): \(r.stdout)")
    }

    @Test func explainAndGraphNeedNoKeyFiles() throws {
        let cli = try CLI(configText: "")
        let path = Self.root.appendingPathComponent("config/hapi.yaml").path
        let explain = try cli.run(
            ["explain", "-c", path, "--namespace", "default", "--type", "permission-request"], env: Self.noSecrets)
        #expect(explain.code == 0, "\(explain.stderr)")
        #expect(explain.stdout.contains("route=default"))
        #expect(explain.stdout.contains("  telegram [telegram]: no devices"), "\(explain.stdout)")
        let json = try cli.run(
            ["explain", "-c", path, "--type", "ready", "--format", "json"], env: Self.noSecrets)
        #expect(json.code == 0, "\(json.stderr)")
        #expect(try JSONValue.parse(json.stdout)["steps"]?.arrayValue?.count == 4)
        for format in ["dot", "mermaid"] {
            let graph = try cli.run(["graph", "-c", path, "--format", format], env: Self.noSecrets)
            #expect(graph.code == 0, "\(graph.stderr)")
            #expect(graph.stdout.contains("telegram"))
        }
    }

    @Test func plainValidateStillReportsAMissingKeyFileWithItsPosition() throws {
        let cli = try CLI(configText: "")
        let path = Self.root.appendingPathComponent("config/hapi.yaml").path
        let r = try cli.run(["validate", "-c", path], env: Self.noSecrets)
        #expect(r.code == 65)
        #expect(
            r.stderr.contains(
                "hapi.yaml:15:22: service-account file \(cli.home)/service-account.json: cannot be read"), "\(r.stderr)"
        )
    }

    @Test func offlineValidationStillChecksEverythingElse() throws {
        let cases: [(String, String)] = [
            // An unknown key in a channel whose key file is missing.
            (
                "  apns:\n    type: apns\n    key-p8: ./AuthKey.p8\n    key-id: ${K}\n    team-id: ${T}\n    topic: a.b\n    colour: red\n",
                "herald.yaml:10:5: unknown key 'colour' in channel apns"
            ),
            // A bad choice next to a missing service account.
            (
                "  fcm:\n    type: fcm\n    service-account: ./sa.json\n    display: loud\n",
                "herald.yaml:7:14: display must be one of data, notification"
            ),
            // A Telegram token that is set is still checked.
            (
                "  telegram:\n    type: telegram\n    bot-token: not-a-token\n",
                "herald.yaml:6:16: bot-token must look like"
            ),
            // A typed value needs its variable, also offline.
            (
                "  fcm:\n    type: fcm\n    service-account: ./sa.json\n    timeout: ${FCM_TIMEOUT}\n",
                "herald.yaml:7:14: environment variable FCM_TIMEOUT is not set"
            ),
        ]
        let store = try CLI(
            configText:
                "version: 1\nstore:\n  path: ${HERALD_TEST_DB}\nchannels:\n  c: { type: log }\nroutes:\n  default:\n    - deliver: [c]\n"
        )
        let r = try store.run(["validate", "--offline"], env: ["HERALD_TEST_DB": ""])
        #expect(r.code == 65)
        #expect(r.stderr.contains("herald.yaml:3:9: environment variable HERALD_TEST_DB is not set"), "\(r.stderr)")
        for (channel, expected) in cases {
            let name = channel.split(separator: ":")[0].trimmingCharacters(in: .whitespaces)
            let cli = try CLI(
                configText:
                    "version: 1\nstore: { path: ./herald.db }\nchannels:\n\(channel)routes:\n  default:\n    - deliver: [\(name)]\n"
            )
            let r = try cli.run(["validate", "--offline"], env: ["K": "", "T": ""])
            #expect(r.code == 65, "\(expected): \(r.stdout)")
            #expect(r.stderr.contains(expected), "\(r.stderr)")
        }
    }

    /// The router keeps `server:` as a node and HeraldServer reads it, but every command still refuses
    /// a config whose `server:` section is wrong, at the key's position (issue 31 §5); a SIGHUP to
    /// `herald run` with one is refused and the worker keeps its config.
    @Test func everyCommandReportsAServerSectionError() async throws {
        let broken = Self.good + "server:\n  listen: 127.0.0.1:0\n  max-conections: 5\n"
        let cli = try CLI(configText: broken)
        for command in [["validate"], ["validate", "--offline"], ["explain"], ["graph"], ["history"], ["run"]] {
            let r = try cli.run(command)
            #expect(r.code == 65, "\(command): \(r.stderr)")
            #expect(
                r.stderr.contains("herald.yaml:10:3: unknown key 'max-conections' in server (expected listen, tls, "),
                "\(command): \(r.stderr)")
        }
        try Self.good.write(toFile: cli.config, atomically: true, encoding: .utf8)
        let worker = try cli.launch(["run", "-c", cli.config])
        #expect(try await worker.waitForStderr("running").contains("running"))
        try broken.write(toFile: cli.config, atomically: true, encoding: .utf8)
        worker.send(SIGHUP)
        let seen = try await worker.waitForStderr("reload refused")
        #expect(seen.contains("herald.yaml:10:3: unknown key 'max-conections' in server"), "\(seen)")
        #expect(worker.isRunning)
        worker.send(SIGTERM)
        if try await worker.waitForExit() == nil { _ = try await worker.kill() }
    }
}
