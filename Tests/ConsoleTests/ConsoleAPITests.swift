import ChannelAPI
import Foundation
import HeraldChannels
import HeraldConsole
import HeraldMHD
import HeraldServer
import Router
import RouterTesting
import Testing

/// The console's routes in herald serve's API, called in-process (request value in, response
/// value out), and the summary read from a real SQLite store.
@Suite struct ConsoleAPITests {
    static let reader = "hrd_console-reader"
    static let sender = "hrd_console-sender"
    static let elsewhere = "hrd_console-elsewhere"

    struct Fixture {
        let router: Router
        let api: HeraldAPI
        let clock: ManualClock
        let home: String

        func close() async {
            await router.shutdown()
            try? FileManager.default.removeItem(atPath: home)
        }

        func call(
            _ method: String, _ path: String, query: [String: String] = [:], token: String? = ConsoleAPITests.reader,
            json: String? = nil
        ) async -> (status: Int, headers: [String: String], body: String) {
            var headers: [String: String] = [:]
            if let token { headers["authorization"] = "Bearer \(token)" }
            if json != nil { headers["content-type"] = "application/json" }
            let r = await api.handle(
                ServerRequest(
                    method: method, path: path, query: query, headers: headers, body: Array((json ?? "").utf8)))
            var h: [String: String] = [:]
            for (name, value) in r.headers { h[name.lowercased()] = value }
            return (r.status, h, String(decoding: r.bodyBytes, as: UTF8.self))
        }
    }

    static func start() async throws -> Fixture {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent(
            "herald-console-api-\(UUID().uuidString)"
        )
        .path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let text = """
            version: 1
            store: { path: \(home)/herald.db }
            channels:
              audit-log: { type: log, path: \(home)/audit.jsonl }
              backup-log: { type: log, path: \(home)/backup.jsonl }
            routes:
              default:
                - deliver: [audit-log]
                - deliver: [backup-log]
                  unless-delivered: [audit-log]
              namespaces:
                hidden:
                  - deliver: [backup-log]
            """
        let config = try ConfigLoader.parse(text, registry: HeraldChannels.registry)
        let clock = ManualClock()
        let router = try await Router(
            config: config, registry: HeraldChannels.registry,
            options: RouterOptions(clock: clock, logSink: RecordingLogSink()))
        var server = ServerConfig()
        server.tokens = [
            APIToken(
                name: "reader", sha256: TokenAuthenticator.sha256Hex(of: reader), namespaces: ["default"],
                scopes: ["read"]),
            APIToken(
                name: "sender", sha256: TokenAuthenticator.sha256Hex(of: sender), namespaces: ["default", "hidden"],
                scopes: ["send"]),
            APIToken(
                name: "elsewhere", sha256: TokenAuthenticator.sha256Hex(of: elsewhere), namespaces: ["other"],
                scopes: ["read"]),
        ]
        return Fixture(router: router, api: HeraldAPI(router: router, server: server), clock: clock, home: home)
    }

    /// Runs `body` with a started fixture, closing it afterwards even when the body throws.
    static func with(_ body: (Fixture) async throws -> Void) async throws {
        let f = try await start()
        do {
            try await body(f)
        } catch {
            await f.close()
            throw error
        }
        await f.close()
    }

    static func object(_ body: String) throws -> [String: JSONValue] {
        try #require(try JSONValue.parse(body).objectValue, "not a JSON object: \(body)")
    }

    @Test func thePageNeedsNoTokenAndIsOnlyGET() async throws {
        try await Self.with { f in
            let page = await f.call("GET", "/console", token: nil)
            #expect(page.status == 200)
            #expect(page.headers["content-type"] == "text/html; charset=utf-8")
            #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            #expect(page.body.contains("<title>Herald console</title>"))
            let js = await f.call("GET", "/console/console.js", token: nil)
            #expect(js.status == 200)
            #expect(js.body == ConsoleAssets.asset(named: "console.js")?.body)
            // An unknown file is a 404 like any other: a JSON error (http-api.md §6; fuzz-http-api
            // found it answered as plain text).
            let missing = await f.call("GET", "/console//v1%%", token: nil)
            #expect(missing.status == 404)
            #expect(missing.headers["content-type"] == "application/json")
            let error = try JSONValue.parse(Array(missing.body.utf8))["error"]
            #expect(error?["code"] == "not_found")
            #expect(await f.call("GET", "/console/nothing.js", token: nil).status == 404)
            let post = await f.call("POST", "/console", token: nil)
            #expect(post.status == 405)
            #expect(post.headers["allow"] == "GET")
            let head = await f.call("HEAD", "/console", token: nil)
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
        }
    }

    @Test func summaryNeedsReadAndShowsOnlyCoveredRoutes() async throws {
        try await Self.with { f in
            let anonymous = await f.call("GET", "/v1/summary", token: nil)
            #expect(anonymous.status == 401)
            #expect(anonymous.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            #expect(await f.call("GET", "/v1/summary", token: "hrd_unknown").status == 401)
            #expect(await f.call("GET", "/v1/summary", token: Self.sender).status == 403)

            let ok = await f.call("GET", "/v1/summary")
            #expect(ok.status == 200)
            let o = try Self.object(ok.body)
            #expect(o["token"]?.objectValue?["name"]?.stringValue == "reader")
            #expect(o["namespaces"] == .array([.string("default")]))
            let channels = o["channels"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue }
            #expect(channels == ["audit-log", "backup-log"])
            let routes = o["graph"]?.objectValue?["routes"]?.arrayValue?.compactMap {
                $0.objectValue?["name"]?.stringValue
            }
            #expect(routes == ["default"])  // not ns:hidden
            #expect(!ok.body.contains(Self.reader))
        }
    }

    @Test func explainAnswersThePlanOfHeraldExplain() async throws {
        try await Self.with { f in
            let notification = #"{"id":"n-explain","namespace":"default","type":"door","title":"Door"}"#
            let r = await f.call("POST", "/v1/explain", json: notification)
            #expect(r.status == 200)
            let expected = try f.router.explain(try HeraldNotification(jsonText: notification)).json
            #expect(try JSONValue.parse(r.body) == expected)
            let steps = try Self.object(r.body)["steps"]?.arrayValue ?? []
            #expect(steps.count == 2)
            #expect(steps.last?.objectValue?["unlessDelivered"] == .array([.string("audit-log")]))
            // Nothing was stored: explain is a dry run.
            #expect(try f.router.history(limit: 10).isEmpty)

            #expect(await f.call("POST", "/v1/explain", token: Self.sender, json: notification).status == 403)
            #expect(await f.call("POST", "/v1/explain", token: nil, json: notification).status == 401)
            let uncovered = await f.call("POST", "/v1/explain", json: #"{"namespace":"hidden","title":"x"}"#)
            #expect(uncovered.status == 403)
            let invalid = await f.call("POST", "/v1/explain", json: #"{"title": 5}"#)
            #expect(invalid.status == 422)
            #expect(try Self.object(invalid.body)["error"]?.objectValue?["field"]?.stringValue == "title")
            #expect(await f.call("POST", "/v1/explain", json: "{").status == 400)
            #expect(await f.call("GET", "/v1/explain").status == 405)
        }
    }

    /// The summary counts the last hour from the store's event log: older deliveries are found
    /// by the search and left out; a namespace the token does not cover is never counted.
    @Test func summaryCountsOnlyTheLastHourFromTheStore() async throws {
        try await Self.with { f in
            for i in 0..<7 {
                _ = try await f.router.send(
                    try HeraldNotification(jsonText: #"{"id":"old-\#(i)","title":"old","type":"t"}"#))
                f.clock.advance(by: .seconds(60))
            }
            f.clock.advance(by: .seconds(2 * 3600))
            for i in 0..<3 {
                _ = try await f.router.send(
                    try HeraldNotification(jsonText: #"{"id":"new-\#(i)","title":"new","type":"t"}"#))
                f.clock.advance(by: .seconds(61))
            }
            _ = try await f.router.send(
                try HeraldNotification(jsonText: #"{"id":"h-1","namespace":"hidden","title":"h","type":"t"}"#))
            let caller = ConsoleSummary.Caller(name: "reader", scopes: ["read"], namespaces: ["default"])
            let o = try #require(
                try ConsoleSummary.load(router: f.router, caller: caller, now: f.clock.now()).json.objectValue)
            let channels = try #require(o["channels"]?.arrayValue).compactMap(\.objectValue)
            let audit = try #require(
                channels.first { $0["name"]?.stringValue == "audit-log" }?["lastHour"]?.objectValue)
            let backup = try #require(
                channels.first { $0["name"]?.stringValue == "backup-log" }?["lastHour"]?.objectValue)
            #expect(audit["delivered"] == .number(3))
            #expect(backup["suppressed"] == .number(3))
            #expect(backup["delivered"] == .number(0))  // the hidden namespace's delivery is not counted
            let perMinute = try #require(o["perMinute"]?.arrayValue).compactMap { $0.objectValue?["delivered"] }
            #expect(perMinute.filter { $0 != .number(0) }.count == 3)
            #expect(o["truncated"] == .bool(false))

            // A token of every namespace sees the hidden one's delivery too.
            let all = ConsoleSummary.Caller(name: "ops", scopes: ["read"], namespaces: ["*"])
            let everything = try ConsoleSummary.load(router: f.router, caller: all, now: f.clock.now()).json
            let hidden = everything.objectValue?["channels"]?.arrayValue?.compactMap(\.objectValue)
                .first { $0["name"]?.stringValue == "backup-log" }?["lastHour"]?.objectValue
            #expect(hidden?["delivered"] == .number(1))
        }
    }
}
