import Foundation
import HeraldHTTPTesting
import HeraldServer
import Testing

/// Issue #30 item 10: a SIGHUP reload of `herald serve` is all or nothing. The config and its
/// channels are built and its `server:` section checked before anything goes live; a reload answered
/// "refused, keeping the old config" leaves the routes, the channels and the tokens as they were.
///
/// The partial path was `router.reload()` (routes and channels live) followed by the `server:`
/// check (a public listen without tokens), whose refusal kept the old tokens only.
@Suite(.serialized) struct ReloadAllOrNothingTests {
    static func config(listen: String, tokens: [(String, String)], route: String) -> String {
        var server = "  listen: \(listen)\n"
        if !tokens.isEmpty {
            server += "  tokens:\n" + tokens.map { ServeCLITests.tokenEntry($0.0, $0.1) }.joined(separator: "\n")
        }
        return """
            version: 1
            store: { path: ./herald.db }
            server:
            \(server)
            channels:
              console: { type: log, path: ./deliveries.jsonl }
              other: { type: log, path: ./other.jsonl }
            routes:
              default:
                - deliver: [\(route)]
            """
    }

    /// Starts `herald serve` on the config at `home` and returns it with its port.
    static func serve(_ home: String, host: String) async throws -> (RunningSubprocess, Int) {
        let p = try Subprocess.launch(
            executable: ServeCLITests.binary, arguments: ["serve", "-c", home + "/herald.yaml"],
            environment: ["HERALD_HOME": home], currentDirectory: home)
        let banner = "serving on http://\(host):"
        let err = try await p.waitForStderr(banner)
        guard let range = err.range(of: banner) else {
            _ = try? await p.kill()
            throw RawHTTPError(description: "herald serve did not start: \(err)")
        }
        return (p, Int(err[range.upperBound...].prefix { $0.isNumber }) ?? 0)
    }

    /// The channel that delivered notification `id`.
    static func channel(of id: String, port: Int, token: String) async throws -> String? {
        let r = try await RawHTTP.request(port: port, "GET", "/v1/notifications/\(id)", token: token)
        return ((r.json?["deliveries"] as? [[String: Any]])?.first?["channel"]) as? String
    }

    /// The new config routes to `other` and drops every token while listening publicly: the
    /// `server:` check refuses it, and the old route and the old token stay in force.
    @Test func aReloadRefusedForItsServerSectionChangesNoRoute() async throws {
        let home = try ServeCLITests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let old = "hrd_reload-old"
        let path = home + "/herald.yaml"
        try Self.config(listen: "0.0.0.0:0", tokens: [("old", old)], route: "console")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let (p, port) = try await Self.serve(home, host: "0.0.0.0")
        try Self.config(listen: "0.0.0.0:0", tokens: [], route: "other")
            .write(toFile: path, atomically: true, encoding: .utf8)
        p.send(SIGHUP)
        let err = try await p.waitForStderr("herald: reload refused")
        #expect(err.contains("server.tokens is empty"), "\(err)")
        let sent = try await RawHTTP.request(
            port: port, "POST", "/v1/notifications", token: old, json: #"{"id":"after-refusal","title":"x"}"#)
        #expect(sent.status == 200, "\(sent.text)")
        #expect(try await Self.channel(of: "after-refusal", port: port, token: old) == "console")
        #expect(!FileManager.default.fileExists(atPath: home + "/other.jsonl"), "the refused route went live")
        p.send(SIGTERM)
        #expect(try await p.waitForExit()?.code == 0)
    }

    /// A new listen port cannot apply without a restart: the reload is refused whole (the new token
    /// and the new route do not go live either), and the next valid reload applies everything.
    @Test func aListenChangeIsRefusedWholeAndTheNextReloadApplies() async throws {
        let home = try ServeCLITests.home()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let old = "hrd_reload-old"
        let new = "hrd_reload-new"
        let path = home + "/herald.yaml"
        try Self.config(listen: "127.0.0.1:0", tokens: [("old", old)], route: "console")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let (p, port) = try await Self.serve(home, host: "127.0.0.1")
        try Self.config(listen: "127.0.0.1:1", tokens: [("new", new)], route: "other")
            .write(toFile: path, atomically: true, encoding: .utf8)
        p.send(SIGHUP)
        let err = try await p.waitForStderr("herald: reload refused")
        #expect(err.contains("listen (127.0.0.1:0 → 127.0.0.1:1)"), "\(err)")
        #expect(try await RawHTTP.request(port: port, "GET", "/v1/notifications", token: new).status == 401)
        let sent = try await RawHTTP.request(
            port: port, "POST", "/v1/notifications", token: old, json: #"{"id":"kept","title":"x"}"#)
        #expect(sent.status == 200, "\(sent.text)")
        #expect(try await Self.channel(of: "kept", port: port, token: old) == "console")

        // The same change on the running listen address: all of it goes live at once.
        try Self.config(listen: "127.0.0.1:0", tokens: [("new", new)], route: "other")
            .write(toFile: path, atomically: true, encoding: .utf8)
        p.send(SIGHUP)
        _ = try await p.waitForStderr("herald: reloaded")
        #expect(try await RawHTTP.request(port: port, "GET", "/v1/notifications", token: old).status == 401)
        let applied = try await RawHTTP.request(
            port: port, "POST", "/v1/notifications", token: new, json: #"{"id":"applied","title":"x"}"#)
        #expect(applied.status == 200, "\(applied.text)")
        #expect(try await Self.channel(of: "applied", port: port, token: new) == "other")
        p.send(SIGTERM)
        #expect(try await p.waitForExit()?.code == 0)
    }
}
