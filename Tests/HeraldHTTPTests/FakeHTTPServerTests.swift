import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldHTTPTesting
import HeraldSync
import Testing

/// Whether a server's stop has finished: its files are gone and its port refuses connections (a running
/// server would fail the TLS check of this client instead, with another code).
private func isStopped(_ server: FakeHTTPServer) async throws -> Bool {
    guard !FileManager.default.fileExists(atPath: server.caFile) else { return false }
    let client = try HTTPClient()
    do {
        _ = try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/", timeout: .seconds(5)))
        await client.shutdown()
        return false
    } catch {
        await client.shutdown()
        return error.code == .connectFailed
    }
}

private struct Planned: Error {}

/// The test kit itself: the server script is a real resource, and stops are awaited.
@Suite("FakeHTTPServer kit", .serialized)
struct FakeHTTPServerTests {
    /// The Python is a `.py` file in the module's resources, and runs without Swift: it prints its usage
    /// for bad arguments, and otherwise its start-up line and one reply per control line.
    @Test func scriptIsAResourceThatRunsAlone() throws {
        let script = try FakeHTTPServer.scriptURL()
        #expect(script.lastPathComponent == "fake_http_server.py")
        let source = try String(contentsOf: script, encoding: .utf8)
        #expect(source.hasPrefix("#!/usr/bin/env python3\n"))

        let usage = try Subprocess.run(executable: "python3", arguments: [script.path])
        #expect(usage.code == 2)
        #expect(usage.stderr.hasPrefix("usage: fake_http_server.py DIRECTORY [http2|http1]"), "\(usage.stderr)")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fake-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try Subprocess.run(
            executable: "python3", arguments: [script.path, directory.path, "http1"],
            stdin: #"{"cmd":"connections"}"# + "\n" + #"{"cmd":"nope"}"# + "\n" + #"{"cmd":"stop"}"# + "\n")
        #expect(run.code == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 4, "\(run.stdout)")
        #expect(lines[0].hasPrefix(#"{"ok": true, "port": "#))
        #expect(lines[0].contains(#""ca": "\#(directory.path)/ca.pem""#))
        #expect(lines[1] == #"{"ok": true, "count": 0}"#)
        #expect(lines[2] == #"{"ok": false, "error": "unknown command 'nope'"}"#)
        #expect(lines[3] == #"{"ok": true}"#)
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("ca.pem").path))
    }

    /// `withFakeHTTPServer` has stopped the server when it returns, also when its body throws.
    @Test func withFakeHTTPServerAwaitsTheStop() async throws {
        let kept = try await withFakeHTTPServer { server in
            try await server.route("/", [FakeHTTPResponse(status: 204)])
            let client = try HTTPClient(configuration: .init(caFile: server.caFile))
            let response = try await client.send(HTTPRequest(url: server.baseURL + "/x"))
            await client.shutdown()
            #expect(response.status == 204)
            return server
        }
        #expect(try await isStopped(kept))

        let thrown = Locked<FakeHTTPServer?>(nil)
        await #expect(throws: Planned.self) {
            try await withFakeHTTPServer(http2: false) { server in
                thrown.withLock { $0 = server }
                throw Planned()
            }
        }
        let server = try #require(thrown.withLock { $0 })
        #expect(try await isStopped(server))
    }

    /// The `.stopsFakeHTTPServers` trait stops every server the test started (here one made directly and
    /// one inside a helper), before the test counts as finished, when the test throws as well.
    @Test func traitStopsEveryServerATestStarted() async throws {
        let started = Locked<[FakeHTTPServer]>([])
        @Sendable func harness() async throws -> FakeHTTPServer { try await FakeHTTPServer.start() }
        let test = try #require(Test.current)
        await #expect(throws: Planned.self) {
            try await StopsFakeHTTPServers().provideScope(for: test, testCase: Test.Case.current) {
                let direct = try await FakeHTTPServer.start()
                let nested = try await harness()
                started.withLock { $0 = [direct, nested] }
                #expect(try await direct.connectionCount() == 0)
                throw Planned()
            }
        }
        let servers = started.withLock { $0 }
        #expect(servers.count == 2)
        for server in servers {
            #expect(try await isStopped(server))
            await #expect(throws: FakeHTTPServerError.self) { try await server.connectionCount() }
        }
    }

    /// Outside any scope a server runs until it is stopped.
    @Test func aServerOutsideAScopeRunsUntilStopped() async throws {
        let server = try await FakeHTTPServer.start()
        #expect(try await isStopped(server) == false)
        await server.stop()
        #expect(try await isStopped(server))
    }
}
