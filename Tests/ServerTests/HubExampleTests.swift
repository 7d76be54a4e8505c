import ChannelAPI
import Foundation
import HeraldHTTPTesting
import Testing

/// Examples/HubPython/herald_hub.py (standard library only) against a real `herald serve`.
@Suite("Python hub example against herald serve", .serialized)
struct HubExampleTests {
    static let script = ServeProcess.repositoryRoot + "/Examples/HubPython/herald_hub.py"

    /// A server with a log sink; the token covers `default` with every scope but `metrics`.
    static func server() throws -> (ServeProcess, String) {
        let (token, entry) = ServeProcess.token(
            name: "hub", namespaces: ["default"], scopes: ["send", "devices", "events", "read"])
        let serve = try ServeProcess { home, listen in
            """
            version: 1
            store: { path: \(home)/herald.db }
            server:
              listen: \(listen)
              tokens:
            \(entry)
            channels:
              console: { type: log, path: \(home)/deliveries.jsonl }
            routes:
              default:
                - deliver: [console]
            """
        }
        return (serve, token)
    }

    static func hub(_ serve: ServeProcess, _ token: String, _ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run(
            executable: "python3", arguments: [script] + arguments,
            environment: ["HERALD_URL": serve.baseURL, "HERALD_TOKEN": token])
    }

    /// The JSON lines the script printed.
    static func lines(_ result: Subprocess.Result) throws -> [JSONValue] {
        try result.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }

    @Test func sendRetryWaitAndReport() async throws {
        let (serve, token) = try Self.server()
        try await serve.start()
        do {
            let first = try Self.hub(serve, token, ["send", #"{"id":"hub-1","title":"Build finished","body":"ok"}"#])
            #expect(first.code == 0, "\(first.stderr)")
            let sent = try #require(try Self.lines(first).first)
            #expect(sent["replayed"] == false)
            #expect(sent["answer"]?["id"] == "hub-1")
            #expect(sent["answer"]?["deliveries"]?.arrayValue?.first?["outcome"] == "delivered")

            // The same id again (what a retry after a lost answer sends) is not routed again.
            let again = try Self.hub(
                serve, token, ["send", "--wait", "none", #"{"id":"hub-1","title":"Build finished"}"#])
            #expect(again.code == 0, "\(again.stderr)")
            #expect(try Self.lines(again).first?["replayed"] == true)
            let sinkLines = try String(contentsOfFile: serve.home + "/deliveries.jsonl", encoding: .utf8)
                .split(separator: "\n")
            #expect(sinkLines.count == 1)

            // No action yet: the wait ends empty after its timeout.
            let none = try Self.hub(serve, token, ["wait-action", "hub-1", "--timeout", "1"])
            #expect(none.code == 0, "\(none.stderr)")
            #expect(try Self.lines(none).first?["event"] == .null)

            // An app reports a button press; the hub's wait returns it at once.
            let report = try Self.hub(
                serve, token, ["report", "hub-1", "action", "--action", "approve", "--device-id", "pixel"])
            #expect(report.code == 0, "\(report.stderr)")
            let waited = try Self.hub(serve, token, ["wait-action", "hub-1", "--timeout", "30"])
            #expect(waited.code == 0, "\(waited.stderr)")
            let event = try #require(try Self.lines(waited).first?["event"])
            #expect(event["kind"] == "action")
            #expect(event["actionId"] == "approve")
            #expect(event["deviceId"] == "pixel")

            // Herald's 4xx reaches the caller as an error, not a retry.
            let invalid = try Self.hub(serve, token, ["send", #"{"title":"x","severity":"loud"}"#])
            #expect(invalid.code == 1)
            #expect(invalid.stderr.contains("HTTP 422"))
            #expect(invalid.stderr.contains("severity"))
            let foreign = try Self.hub(serve, token, ["send", #"{"namespace":"other","title":"x"}"#])
            #expect(foreign.code == 1)
            #expect(foreign.stderr.contains("HTTP 403"))
        } catch {
            await serve.cleanUp()
            throw error
        }
        await serve.cleanUp()
    }

    @Test func theEventStreamResumesAcrossARestartWithEveryEventOnce() async throws {
        let (serve, token) = try Self.server()
        try await serve.start()
        do {
            for i in 1...3 {
                let r = try Self.hub(serve, token, ["send", #"{"id":"before-\#(i)","title":"t"}"#])
                #expect(r.code == 0, "\(r.stderr)")
            }
            // 3 notifications × (notification + delivery) before, 2 × 2 after the restart.
            let reader = try Subprocess.launch(
                executable: "python3",
                arguments: [Self.script, "events", "--namespace", "default", "--since", "0", "--count", "10"],
                environment: ["HERALD_URL": serve.baseURL, "HERALD_TOKEN": token])
            let deadline = ContinuousClock.now + .seconds(30)
            while reader.stdout.split(separator: "\n").count < 6, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(reader.stdout.split(separator: "\n").count == 6)

            // SIGTERM ends the open stream; the reader reconnects with Last-Event-ID once the server is back.
            let stopped = try await serve.stop()
            #expect(stopped?.code == 0)
            try await serve.start()
            for i in 1...2 {
                let r = try Self.hub(serve, token, ["send", #"{"id":"after-\#(i)","title":"t"}"#])
                #expect(r.code == 0, "\(r.stderr)")
            }
            let result = try #require(try await reader.waitForExit(timeout: .seconds(60)))
            #expect(result.code == 0, "\(result.stderr)")
            #expect(result.stderr.contains("reconnecting"))
            let events = try Self.lines(result)
            #expect(events.count == 10)
            // Every event exactly once, in order: ids strictly increasing, no gap.
            let ids = events.compactMap { $0["id"]?.stringValue.flatMap { Int($0) } }
            #expect(ids == Array(1...10))
            let notifications = events.filter { $0["event"] == "notification" }.compactMap {
                $0["data"]?["notificationId"]?.stringValue  // parsed JSON, as the TypeScript client gives it
            }
            #expect(notifications == ["before-1", "before-2", "before-3", "after-1", "after-2"])
            #expect(events.filter { $0["event"] == "delivery" }.count == 5)
        } catch {
            await serve.cleanUp()
            throw error
        }
        await serve.cleanUp()
    }
    /// Examples/HubTypeScript compiled with tsc (strict) and run with node: the send, the replayed
    /// resend, the event stream read from the fetch body, and an empty wait for an answer.
    @Test func theTypeScriptHubCompilesAndRuns() async throws {
        let tsc = try #require(Subprocess.find("tsc"), "tsc (Debian node-typescript) is needed: make deps")
        let (serve, token) = try Self.server()
        try await serve.start()
        do {
            let example = ServeProcess.repositoryRoot + "/Examples/HubTypeScript"
            let out = serve.home + "/ts"
            // The example's own tsconfig.json (strict, ES2022, its node-globals.d.ts), as its README runs it.
            let compiled = try Subprocess.run(executable: tsc, arguments: ["-p", example, "--outDir", out])
            #expect(compiled.code == 0, "\(compiled.stdout) \(compiled.stderr)")
            try #"{"type":"module"}"#.write(toFile: out + "/package.json", atomically: true, encoding: .utf8)
            let before = try Self.hub(serve, token, ["send", #"{"id":"earlier","title":"t"}"#])
            #expect(before.code == 0, "\(before.stderr)")

            let run = try Subprocess.run(
                executable: "node", arguments: [out + "/hub.js"],
                environment: ["HERALD_URL": serve.baseURL, "HERALD_TOKEN": token, "WAIT_SECONDS": "1"])
            #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains("delivery console - delivered"))
            #expect(lines.contains("resent: replayed=true"))
            #expect(lines.contains("no answer in time"))
            // The stream from id 0: the earlier notification's two events, then the new one's.
            let events = lines.filter { $0.hasPrefix("event ") }
            #expect(events.count >= 4)
            #expect(events.first?.hasPrefix("event 1 notification") == true)
            #expect(events.first?.contains("earlier") == true)
            #expect(events.dropFirst().first?.hasPrefix("event 2 delivery") == true)
            #expect(events.contains { $0.hasPrefix("event 3 notification") })
            let sinkLines = try String(contentsOfFile: serve.home + "/deliveries.jsonl", encoding: .utf8)
                .split(separator: "\n")
            #expect(sinkLines.count == 2)  // the resend was not routed again
        } catch {
            await serve.cleanUp()
            throw error
        }
        await serve.cleanUp()
    }
}
