import ChannelAPI
import Foundation
import HeraldHTTPTesting
import Testing

/// The console in a real browser: headless Chromium, driven over the DevTools protocol by
/// Scripts/console_driver.py, against a real `herald serve`. The driver only observes (and sends
/// one notification through the API, as a hub would); the assertions are here.
@Suite(.serialized) struct ConsoleBrowserTests {
    static let chromium = ProcessInfo.processInfo.environment["CHROMIUM"] ?? "/usr/bin/chromium"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Scripts/console_driver.py").path
    static let docsScreenshot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/console.png").path

    static let channelsAndRoutes = """
        channels:
          audit-log: { type: log, path: ./audit.jsonl }
          backup-log: { type: log, path: ./backup.jsonl }
        routes:
          default:
            - deliver: [audit-log]
            - deliver: [backup-log]
              unless-delivered: [audit-log]
        """

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: chromium), "needs Chromium"))
    func consoleInChromium() async throws {
        let server = try ServeFixture(channelsAndRoutes: Self.channelsAndRoutes)
        // The screenshots stay here after the run, for a look (each run replaces them).
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("herald-console-screenshots").path
        try? FileManager.default.removeItem(atPath: out)
        let run: Subprocess.Result
        do {
            run = try Subprocess.run(
                executable: "python3",
                arguments: [
                    Self.script, "--base", server.baseURL, "--good", server.tokens["ops"] ?? "",
                    "--bad", "hrd_not_a_configured_token", "--noread", server.tokens["app"] ?? "",
                    "--send", server.tokens["hub"] ?? "", "--out", out,
                ],
                environment: ["CHROMIUM": Self.chromium])
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
        let serverLog = server.process.stderr
        let seen = try #require(
            try JSONValue.parse(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).objectValue,
            "driver said: \(run.stdout) \(run.stderr)")
        try #require(seen["ok"] == .bool(true), "driver failed: \(seen["error"]?.stringValue ?? run.stderr)")

        // The page itself: served by herald serve, with a policy that allows its own origin only.
        let page = try #require(seen["consoleResponse"]?.objectValue)
        #expect(page["status"] == .number(200))
        #expect(page["contentType"]?.stringValue == "text/html; charset=utf-8")
        let csp = page["csp"]?.stringValue ?? ""
        #expect(csp.contains("connect-src 'self'"), "\(csp)")

        // Sign-in: an unknown token and a token without `read` each get a clear message.
        let bad = seen["badTokenError"]?.stringValue ?? ""
        #expect(bad.contains("401") && bad.contains("does not accept this token"), "\(bad)")
        #expect(seen["appHiddenAfterBad"] == .bool(true))
        let noRead = seen["noReadError"]?.stringValue ?? ""
        #expect(noRead.contains("does not have the read scope"), "\(noRead)")
        // A good token shows the overview with the config's channels and types.
        #expect(seen["channelNames"] == .array([.string("audit-log"), .string("backup-log")]))
        #expect(seen["channelTypes"] == .array([.string("log"), .string("log")]))
        #expect(seen["chartSVG"] == .bool(true))
        #expect(seen["who"]?.stringValue == "Signed in as ops (devices, read)")
        #expect(seen["tokenInStorage"] == .bool(true))
        let token = server.tokens["ops"] ?? "-"
        let location = try #require(seen["locationAfterSignIn"]?.stringValue)
        #expect(!location.contains(token), "the token is in the URL: \(location)")

        // The overview counts that delivery per channel (delivered, retry, dead, failed, suppressed)
        // and draws it in the per-minute chart.
        let counts = try #require(seen["overviewAfterSend"]?.objectValue)
        #expect(counts["audit-log"] == .array([1, 0, 0, 0, 0].map { .number($0) }))
        #expect(counts["backup-log"] == .array([0, 0, 0, 0, 1].map { .number($0) }))
        #expect(seen["chartBars"] == .number(1))

        // Keyboard: Tab walks the navigation in order, Enter opens a section, and the namespace
        // selector and Sign out are reachable too.
        #expect(seen["focusOrder"] == .array(["Overview", "Notifications", "Routes"].map { .string($0) }))
        #expect(seen["hashAfterEnter"]?.stringValue == "#routes")
        let after = seen["focusAfterRoutes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(Array(after.prefix(4)) == ["Devices", "Relays", "namespace", "signout"], "\(after)")

        // Screenshots, and nothing wider than a 360 px phone.
        for key in ["desktopScreenshot", "phoneScreenshot"] {
            let path = try #require(seen[key]?.stringValue)
            let png = try #require(FileManager.default.contents(atPath: path))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "\(path) is not a PNG")
            #expect(png.count > 5000)
        }
        let layout = try #require(seen["phoneLayout"]?.objectValue)
        #expect(layout["innerWidth"] == .number(360))
        #expect(layout["scrollWidth"] == .number(360), "the page scrolls sideways at 360 px")
        #expect(layout["offenders"] == .array([]), "elements past the right edge: \(layout["offenders"] ?? .null)")

        // The notification sent through the API appeared with its outcome, without a reload.
        #expect(seen["sendStatus"] == .number(200))
        let live = seen["liveRowOutcomes"]?.stringValue ?? ""
        #expect(live.contains("1 delivered") && live.contains("1 suppressed"), "\(live)")
        #expect(seen["noReload"] == .bool(true))

        // The detail view lists both planned deliveries and names the rule that suppressed step 2.
        let rows = try #require(seen["detailRows"]?.arrayValue).compactMap(\.objectValue)
        #expect(rows.count == 2)
        let audit = try #require(rows.first { $0["channel"]?.stringValue == "audit-log" })
        #expect(audit["outcome"]?.stringValue == "delivered")
        #expect(audit["attempts"]?.stringValue == "1")
        #expect(audit["suppressedBy"]?.stringValue == "")
        let backup = try #require(rows.first { $0["channel"]?.stringValue == "backup-log" })
        #expect(backup["outcome"]?.stringValue == "suppressed")
        #expect(backup["suppressedBy"]?.stringValue == "step 2 rule: unless-delivered: audit-log")
        let accepted = seen["timeline"]?.arrayValue?.first?.stringValue ?? ""
        #expect(accepted.hasSuffix("accepted"), "\(accepted)")

        // A lifecycle event appears on the open timeline.
        #expect(seen["eventStatus"] == .number(201))
        let action = seen["timelineAfterEvent"]?.stringValue ?? ""
        #expect(action.contains("action") && action.contains("approve") && action.contains("pixel"), "\(action)")

        // Routes: the graph of `herald graph`, and a rendered plan.
        let graphs = try #require(seen["graphs"]?.arrayValue).compactMap(\.objectValue)
        #expect(graphs.map { $0["route"]?.stringValue } == ["default"])
        let labels = graphs.first?["text"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(labels.contains("unless delivered: audit-log"))
        #expect(labels.contains("backup-log (log)"))
        #expect(seen["planSteps"] == .number(2))
        let plan = seen["planText"]?.stringValue ?? ""
        #expect(plan.contains("Route default") && plan.contains("unless delivered: audit-log"), "\(plan)")
        #expect(plan.contains("audit-log [log]: sink"))

        // Devices: listed without secrets; removed only after the confirmation.
        #expect(seen["registerStatus"] == .number(200))
        let device = seen["deviceRow"]?.stringValue ?? ""
        #expect(device.contains("pixel") && device.contains("phone"), "\(device)")
        #expect(seen["secretOnPage"] == .bool(false))
        #expect(seen["confirmShown"]?.stringValue == "Remove pixel")
        #expect(seen["stillListedBeforeConfirm"] == .number(1))
        #expect(seen["devicesAfterRemove"] == .number(0))

        // Every request went to the server itself, and the token was never in a URL.
        let requests = try #require(seen["requests"]?.arrayValue).compactMap(\.stringValue)
        #expect(requests.count > 5)
        for url in requests {
            #expect(url.hasPrefix(server.baseURL + "/") || url.hasPrefix("data:"), "request to \(url)")
        }
        #expect(!requests.contains { $0.contains(token) })
        #expect(requests.contains { $0.hasPrefix(server.baseURL + "/v1/events") })
        // Nor in the server's log.
        #expect(!serverLog.contains(token))

        // The docs show the desktop overview: written when missing, or refreshed with
        // HERALD_UPDATE_SCREENSHOTS=1 (not on every run, which would leave the tree dirty).
        let refresh = ProcessInfo.processInfo.environment["HERALD_UPDATE_SCREENSHOTS"] == "1"
        if let path = seen["desktopScreenshot"]?.stringValue,
            refresh || !FileManager.default.fileExists(atPath: Self.docsScreenshot)
        {
            try? FileManager.default.removeItem(atPath: Self.docsScreenshot)
            try FileManager.default.copyItem(atPath: path, toPath: Self.docsScreenshot)
        }
    }
}
