import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

/// The Pulse guide's own example code (seed 004, section 五), run as written against Herald's
/// relay on 127.0.0.1: the Node 18 `pushActivity`, the Python stdlib `push_activity` and the
/// `curl`/`openssl` commands each get 200, then 409, 404 and 401 in the scenarios that produce them.
/// (The command-line block has an unclosed quote in the guide; it runs with that one character fixed.)
/// The guide's text is kept in `Scripts/pulse_guide_004.txt` (a copy of the seed, checked equal to it
/// when the seed is present) and the code blocks are cut from it at test time.
@Suite("Pulse guide code against the relay", .serialized, .stopsFakeHTTPServers)
struct PulseRelayGuideCodeTests {
    static let guidePath = ServeProcess.repositoryRoot + "/Tests/ServerTests/Scripts/pulse_guide_004.txt"
    static let seedPath = "/work/shared/seeds/004_6ba746c86ae51669.txt"

    static func guide() throws -> String { try String(contentsOfFile: guidePath, encoding: .utf8) }

    /// The fenced block of `language` after the heading that starts with `heading`.
    static func block(_ heading: String, _ language: String) throws -> String {
        let text = try guide()
        guard let h = text.range(of: "\n### " + heading),
            let open = text.range(of: "```" + language + "\n", range: h.upperBound..<text.endIndex),
            let close = text.range(of: "\n```", range: open.upperBound..<text.endIndex)
        else { throw SubprocessError("no \(language) block under \(heading) in the guide") }
        return String(text[open.upperBound..<close.lowerBound]) + "\n"
    }

    @Test func fixtureIsTheSeed() throws {
        guard FileManager.default.fileExists(atPath: Self.seedPath) else { return }
        #expect(try Self.guide() == (try String(contentsOfFile: Self.seedPath, encoding: .utf8)))
    }

    static func saved(_ p: PulseRelayRig, _ site: PulseRelayRig.Site) -> JSONValue {
        [
            "relay": .string("http://127.0.0.1:\(p.port)/"), "deviceId": .string(site.deviceId),
            "sourceId": .string(site.sourceId), "pushKey": .string(site.pushKey),
        ]
    }

    static func update(_ ref: String, revision: Int64) -> JSONValue {
        [
            "ref": .string(ref), "event": "update",
            "contentState": ["title": "测试", "summary": "", "status": "running", "revision": .number(Double(revision))],
        ]
    }

    /// The scenarios every language runs after the guide's own example: 200, 409 (same revision),
    /// 404 (no activity for the ref), 401 (another key).
    static func scenarios(_ p: PulseRelayRig, _ site: PulseRelayRig.Site, wrong: PulseRelayRig.Site) -> JSONValue {
        var forged = saved(p, site)
        if case .object(var o) = forged {
            o["pushKey"] = .string(wrong.pushKey)
            forged = .object(o)
        }
        let r = Int64(Date().timeIntervalSince1970 * 1000)
        return [
            ["body": update("n1", revision: r)], ["body": update("n1", revision: r)],
            ["body": update("none", revision: r)], ["saved": forged, "body": update("n1", revision: r + 1)],
        ]
    }

    static func setUp(
        _ body: (PulseRelayRig, PulseRelayRig.Phone, PulseRelayRig.Site, PulseRelayRig.Site, String) async throws ->
            Void
    )
        async throws
    {
        try await RelayRig.with(relays: try PulseRelayRig.relays(extra: "update-interval: 0s"), withHub: false) { rig in
            try await rig.apnsAnswers(200)
            let p = PulseRelayRig(rig: rig)
            let phone = try await p.register()
            let site = try await p.mint(phone)
            let wrong = try await p.mint(phone, name: "Other")
            for ref in ["order-1024", "upload-77", "n1", "demo"] { try await p.activity(phone, site, ref: ref) }
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pulse-guide-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            try await body(p, phone, site, wrong, dir)
            try? FileManager.default.removeItem(atPath: dir)
        }
    }

    static func statuses(_ r: Subprocess.Result) -> [Int] {
        r.stdout.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The content states APNs got, by ref.
    static func sentRefs(_ p: PulseRelayRig) async throws -> [String] {
        try await p.rig.apns.requests().compactMap {
            try? JSONValue.parse($0.body)["aps"]?["content-state"]?["title"]?.stringValue
        }
    }

    /// Writes the guide's block as `guideFile` and `driver` beside it, runs the driver with `executable`
    /// (saved key and scenarios in the environment), expects the scenarios' codes and returns the `aps`
    /// of the guide's own example push, which went out first.
    static func runGuide(
        _ block: (heading: String, language: String), guideFile: String, driver: (file: String, text: String),
        executable: String
    ) async throws -> JSONValue {
        var example: JSONValue = .null
        try await setUp { p, _, site, wrong, dir in
            try Self.block(block.heading, block.language).write(
                toFile: dir + "/" + guideFile, atomically: true, encoding: .utf8)
            try driver.text.write(toFile: dir + "/" + driver.file, atomically: true, encoding: .utf8)
            let r = try Subprocess.run(
                executable: executable, arguments: [dir + "/" + driver.file],
                environment: [
                    "PULSE_SAVED": saved(p, site).canonicalString,
                    "PULSE_SCENARIOS": scenarios(p, site, wrong: wrong).canonicalString,
                ], currentDirectory: dir)
            #expect(r.succeeded, "\(r.stderr)")
            #expect(statuses(r) == [200, 409, 404, 401])
            let sent = try await p.rig.apns.requests()
            #expect(sent.count == 2, "the guide's example update and the first scenario")
            let firstSent = try #require(sent.first)
            example = try #require(try JSONValue.parse(firstSent.body)["aps"])
        }
        return example
    }

    @Test func nodePushActivity() async throws {
        let driver = """
            globalThis.saved = JSON.parse(process.env.PULSE_SAVED);
            const { pushActivity } = await import('./guide.mjs');
            for (const s of JSON.parse(process.env.PULSE_SCENARIOS)) {
              console.log(await pushActivity(s.saved ?? globalThis.saved, s.body));
            }
            """
        let example = try await Self.runGuide(
            ("Node.js", "js"), guideFile: "guide.mjs", driver: ("driver.mjs", driver), executable: "node")
        #expect(example["content-state"]?["template"] == "steps")
        #expect(example["content-state"]?["site"] == "Example Shop")
        #expect(example["alert"]?["body"] == "骑手已取餐")
    }

    @Test func pythonPushActivity() async throws {
        let driver = """
            import json, os
            saved = json.loads(os.environ["PULSE_SAVED"])
            exec(compile(open("guide.py", encoding="utf-8").read(), "guide.py", "exec"))
            for s in json.loads(os.environ["PULSE_SCENARIOS"]):
                print(push_activity(s.get("saved", saved), s["body"]))
            """
        let example = try await Self.runGuide(
            ("Python", "python"), guideFile: "guide.py", driver: ("driver.py", driver), executable: "python3")
        #expect(example["content-state"]?["template"] == "progress")
        #expect(example["content-state"]?["progress"] == 0.42)
    }

    /// The guide's `BODY=` line ends `'000'}}'`: the last quote is never closed, so the block as
    /// printed is a shell syntax error. The one-character fix (`'000}}'`) is what it means.
    static let bodyQuoteBug = "'000'}}'"
    static let bodyQuoteFix = "'000}}'"

    /// The command-line block with only its first line's placeholder values filled in (the relay,
    /// the saved ids, the key padded with `=` as the guide's note says) and its quoting bug fixed;
    /// `uuidgen` is provided when the machine lacks it.
    @Test func curlAndOpenSSL() async throws {
        try await Self.setUp { p, phone, site, wrong, dir in
            let printed = try Self.block("命令行", "sh")
            #expect(
                printed.components(separatedBy: Self.bodyQuoteBug).count == 2, "the guide's quoting bug is still there")
            let syntax = try Subprocess.run(executable: "sh", arguments: ["-n", "-c", printed])
            #expect(!syntax.succeeded, "the block as printed does not parse")
            let block = printed.replacingOccurrences(of: Self.bodyQuoteBug, with: Self.bodyQuoteFix)
            let lines = block.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first == "RELAY=https://relay.crsyounen.com DEVICE=… SOURCE=… KEY=…")
            func run(key: String) throws -> Int? {
                let first =
                    "RELAY=http://127.0.0.1:\(p.port) DEVICE=\(site.deviceId) SOURCE=\(site.sourceId) KEY=\(key)="
                let script = ([first] + lines.dropFirst().map(String.init)).joined(separator: "\n")
                if Subprocess.find("uuidgen") == nil {
                    try "#!/bin/sh\npython3 -c 'import uuid; print(uuid.uuid4())'\n".write(
                        toFile: dir + "/uuidgen", atomically: true, encoding: .utf8)
                    _ = try Subprocess.run(executable: "chmod", arguments: ["+x", dir + "/uuidgen"])
                }
                let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
                let r = try Subprocess.run(
                    executable: "sh", arguments: ["-c", script], environment: ["PATH": dir + ":" + path])
                return r.stdout.split(separator: "\n").last.flatMap { Int($0) }
            }
            #expect(try run(key: site.pushKey) == 200)
            #expect(try await p.activity(phone, site, ref: "demo", token: nil) == 200)
            #expect(try run(key: site.pushKey) == 404, "the app reported the activity ended")
            #expect(try await p.activity(phone, site, ref: "demo") == 200)
            let ahead = Int64(Date().timeIntervalSince1970 + 3600) * 1000
            #expect(try await p.push(site, PulseRelayRig.body(ref: "demo", revision: ahead)).status == 200)
            #expect(try run(key: site.pushKey) == 409, "its revision is below the last one")
            #expect(try run(key: wrong.pushKey) == 401)
            #expect(try await Self.sentRefs(p) == ["测试", "订单 #1024"])
        }
    }
}
