import Foundation
import HeraldHTTPTesting
import HeraldServer
import Testing

/// Issue 17: the real `herald serve` binary: the public-listen refusal, `tokens new`, SIGHUP swapping
/// tokens without dropping an open event stream, SIGTERM finishing a request in flight.
@Suite(.serialized) struct ServeCLITests {
    /// The `herald` built beside this test bundle (as RouterTests' CLI helper finds it).
    static var binary: String {
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() {
            let beside = bundle.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/herald").path
    }

    static func home() throws -> String {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-serve-cli-\(UUID().uuidString)"
        )
        .path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        return home
    }

    /// Runs `herald ARGUMENTS -c HOME/herald.yaml` with `HERALD_HOME` set to `home`.
    static func herald(_ home: String, _ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.run(
            executable: binary, arguments: arguments + ["-c", home + "/herald.yaml"], environment: ["HERALD_HOME": home]
        )
    }

    static func config(server: String) -> String {
        """
        version: 1
        store: { path: ./herald.db }
        server:
        \(server)
        channels:
          console: { type: log, path: ./deliveries.jsonl }
        routes:
          default:
            - deliver: [console]
        """
    }

    static func tokenEntry(_ name: String, _ token: String) -> String {
        """
            - name: \(name)
              sha256: \(TokenAuthenticator.sha256Hex(of: token))
              namespaces: [default]
              scopes: [send, read, events]
        """
    }

    /// Starts `herald serve` and returns it with the port it printed.
    static func serve(_ home: String) async throws -> (RunningSubprocess, Int) {
        let p = try Subprocess.launch(
            executable: binary, arguments: ["serve", "-c", home + "/herald.yaml"], environment: ["HERALD_HOME": home],
            currentDirectory: home)
        let err = try await p.waitForStderr("serving on http://127.0.0.1:")
        guard let range = err.range(of: "serving on http://127.0.0.1:") else {
            _ = try? await p.kill()
            throw RawHTTPError(description: "herald serve did not start: \(err)")
        }
        let port = Int(err[range.upperBound...].prefix { $0.isNumber }) ?? 0
        return (p, port)
    }

    @Test func aPublicListenWithoutTokensIsRefusedWithThePosition() async throws {
        let home = try Self.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        try Self.config(server: "  listen: 0.0.0.0:0").write(
            toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let r = try Subprocess.run(
            executable: Self.binary, arguments: ["serve", "-c", home + "/herald.yaml"],
            environment: ["HERALD_HOME": home])
        #expect(r.code == 65)
        #expect(r.stderr.contains("herald.yaml:4:11"), "\(r.stderr)")
        #expect(r.stderr.contains("server.tokens is empty"))
    }

    @Test func aPublicListenWithTokensButNoTLSStartsWithAWarning() async throws {
        let home = try Self.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        try Self.config(server: "  listen: 0.0.0.0:0\n  tokens:\n" + Self.tokenEntry("t", "hrd_public"))
            .write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let p = try Subprocess.launch(
            executable: Self.binary, arguments: ["serve", "-c", home + "/herald.yaml"],
            environment: ["HERALD_HOME": home],
            currentDirectory: home)
        let err = try await p.waitForStderr("serving on http://0.0.0.0:")
        #expect(err.contains("is not loopback and server.tls is not set; terminate TLS in front of Herald"), "\(err)")
        #expect(err.contains("serving on http://0.0.0.0:"))
        p.send(SIGTERM)
        #expect(try await p.waitForExit()?.code == 0)
    }

    @Test func tokensNewPrintsATokenAndItsHash() throws {
        let r = try Subprocess.run(
            executable: Self.binary,
            arguments: [
                "tokens", "new", "--name", "hub", "--namespaces", "default,team-*", "--scopes", "send,read", "--format",
                "json",
            ])
        #expect(r.code == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: String])
        let token = try #require(o["token"])
        #expect(token.hasPrefix("hrd_"))
        // 32 random bytes, base64url without padding: 43 characters.
        #expect(token.count == 4 + 43)
        #expect(token.dropFirst(4).allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
        let yaml = try #require(o["yaml"])
        #expect(yaml.contains("sha256: \(TokenAuthenticator.sha256Hex(of: token))"))
        #expect(yaml.contains(#"namespaces: ["default", "team-*"]"#))
        #expect(yaml.contains(#"scopes: ["send", "read"]"#))
        #expect(!yaml.contains(token))
        let bad = try Subprocess.run(
            executable: Self.binary, arguments: ["tokens", "new", "--name", "x", "--scopes", "root"])
        #expect(bad.code == 2)
    }

    @Test func sighupSwapsTokensWithoutDroppingAnOpenStream() async throws {
        let home = try Self.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let old = "hrd_old-token"
        let new = "hrd_new-token"
        let path = home + "/herald.yaml"
        try Self.config(server: "  listen: 127.0.0.1:0\n  keepalive: 1s\n  tokens:\n" + Self.tokenEntry("old", old))
            .write(toFile: path, atomically: true, encoding: .utf8)
        let (p, port) = try await Self.serve(home)
        let stream = try await SSEClient.open(port: port, path: "/v1/events", token: old)
        #expect(stream.head.status == 200)
        _ = try await stream.read(until: { $0.contains { $0.event == "comment" } })
        try Self.config(server: "  listen: 127.0.0.1:0\n  keepalive: 1s\n  tokens:\n" + Self.tokenEntry("new", new))
            .write(toFile: path, atomically: true, encoding: .utf8)
        p.send(SIGHUP)
        let err = try await p.waitForStderr("herald: reloaded")
        #expect(err.contains("herald: reloaded"))
        #expect(try await RawHTTP.request(port: port, "GET", "/v1/notifications", token: old).status == 401)
        let sent = try await RawHTTP.request(
            port: port, "POST", "/v1/notifications", token: new, json: #"{"id":"after-hup","title":"x"}"#)
        #expect(sent.status == 200, "\(sent.text)")
        // The stream opened before the reload is still open and gets the new notification.
        let events = try await stream.read(until: { $0.contains { $0.event == "notification" } })
        #expect(events.contains { $0.event == "notification" && $0.data.contains("after-hup") })
        stream.close()
        p.send(SIGTERM)
        let result = try await p.waitForExit()
        #expect(result?.code == 0)
    }

    /// `wait=none` answers 202 once stored; the worker `herald serve` runs (as `herald run` does) delivers it.
    @Test func waitNoneIsDeliveredByTheWorker() async throws {
        let home = try Self.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let token = "hrd_queue-token"
        try Self.config(server: "  listen: 127.0.0.1:0\n  tokens:\n" + Self.tokenEntry("q", token))
            .write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let (p, port) = try await Self.serve(home)
        let queued = try await RawHTTP.request(
            port: port, "POST", "/v1/notifications?wait=none", token: token, json: #"{"id":"queued","title":"x"}"#)
        #expect(queued.status == 202)
        #expect(queued.json?["planned"] as? Int == 1)
        var outcome: String?
        for _ in 0..<100 {
            let r = try await RawHTTP.request(port: port, "GET", "/v1/notifications/queued", token: token)
            outcome = (r.json?["deliveries"] as? [[String: Any]])?.first?["outcome"] as? String
            if outcome == "delivered" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(outcome == "delivered")
        p.send(SIGTERM)
        #expect(try await p.waitForExit()?.code == 0)
    }

    /// A send whose receiver takes 1.5 s is in flight when SIGTERM arrives: it is answered with its
    /// report, new connections are refused, and the process exits 0.
    @Test(.stopsFakeHTTPServers) func sigtermFinishesARequestInFlightAndExits0() async throws {
        let receiver = try await FakeHTTPServer.start(http2: false)
        try await receiver.route("/hook", [FakeHTTPResponse(status: 204, delay: .milliseconds(1500))])
        let home = try Self.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let token = "hrd_term-token"
        let config = """
            version: 1
            store: { path: ./herald.db }
            tls: { ca-file: \(receiver.caFile) }
            server:
              listen: 127.0.0.1:0
              tokens:
            \(Self.tokenEntry("t", token))
            channels:
              slow:
                type: webhook
                url: \(receiver.baseURL)/hook
                secret: whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
            routes:
              default:
                - deliver: [slow]
            """
        try config.write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        let (p, port) = try await Self.serve(home)
        let clock = ContinuousClock()
        let started = clock.now
        async let inFlight = RawHTTP.request(
            port: port, "POST", "/v1/notifications", token: token, json: #"{"id":"inflight","title":"x"}"#)
        // SIGTERM only once the request is in flight (the receiver has it); a fixed sleep was too
        // short under ThreadSanitizer on a loaded machine, and the stop came before the request.
        for _ in 0..<6_000 where try await receiver.requests().isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        p.send(SIGTERM)
        let answer = try await inFlight
        #expect(answer.status == 200, "\(answer.text)")
        #expect((answer.json?["deliveries"] as? [[String: Any]])?.first?["outcome"] as? String == "delivered")
        #expect(clock.now - started >= .milliseconds(1400))
        let result = try await p.waitForExit()
        #expect(result?.code == 0, "\(result?.stderr ?? "")")
        #expect(result?.stderr.contains("herald: stopped") == true)
        // No longer accepting.
        await #expect(throws: (any Error).self) {
            _ = try await RawHTTP.request(port: port, "GET", "/healthz", timeout: 1)
        }
    }
}
