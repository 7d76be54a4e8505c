import ChannelAPI
import Foundation
import HeraldMHD
import HeraldServer
import HeraldSync
import Router
import Testing

/// Issue 17: the API's pure parts without a socket: the token bucket, the token hashes, shutdown and
/// an unwritable store (503).
@Suite struct HeraldAPIUnitTests {
    @Test func theTokenBucketRefillsAtItsRate() {
        let limiter = RateLimiter(perSecond: 2, burst: 3)
        #expect((0..<3).map { _ in limiter.take("a", now: 100) } == [nil, nil, nil])
        #expect(limiter.take("a", now: 100) == 1)
        #expect(limiter.take("b", now: 100) == nil)
        // Half a second later one request is back.
        #expect(limiter.take("a", now: 100.5) == nil)
        #expect(limiter.take("a", now: 100.5) == 1)
        // A slow rate asks for a longer wait, in whole seconds.
        let slow = RateLimiter(perSecond: 0.1, burst: 1)
        #expect(slow.take("x", now: 0) == nil)
        #expect(slow.take("x", now: 0) == 10)
        // A clock going backwards never adds tokens.
        #expect(slow.take("x", now: -50) == 10)
    }

    @Test func tokensAreFoundByTheirHash() {
        let hash = TokenAuthenticator.sha256Hex(of: "hrd_x")
        // SHA-256("hrd_x"), computed independently (Python hashlib).
        #expect(hash == "f73364c836af74d5e120bbecee335e8973c097969b32728f9f227708d7790158")
        let auth = TokenAuthenticator(tokens: [
            APIToken(name: "x", sha256: hash, namespaces: ["default"], scopes: ["read"]),
            APIToken(name: "broken", sha256: "zz", namespaces: ["default"], scopes: ["read"]),
        ])
        #expect(auth.authenticate("hrd_x")?.name == "x")
        #expect(auth.authenticate("hrd_y") == nil)
        #expect(auth.authenticate("") == nil)
    }

    static func api(store: (@Sendable (String) throws -> any HeraldStore)? = nil) async throws -> (HeraldAPI, Router) {
        let (router, _, _) = try await ServerHarness.makeRouter(store: store)
        return (HeraldAPI(router: router, server: ServerHarness.defaults), router)
    }

    static func post(_ api: HeraldAPI, _ json: String) async -> ServerResponse {
        await api.handle(
            ServerRequest(
                method: "POST", path: "/v1/notifications",
                headers: ["authorization": "Bearer \(ServerHarness.admin)", "content-type": "application/json"],
                body: Array(json.utf8)))
    }

    @Test func afterShutdownBeginsEveryRequestGets503() async throws {
        let (api, router) = try await Self.api()
        #expect(await Self.post(api, #"{"id":"a","title":"x"}"#).status == 200)
        api.beginShutdown()
        let refused = await Self.post(api, #"{"id":"b","title":"x"}"#)
        #expect(refused.status == 503)
        #expect(try router.store.notification(id: "b") == nil)
        let health = await api.handle(ServerRequest(method: "GET", path: "/healthz"))
        #expect(health.status == 503)
        #expect(String(decoding: health.bodyBytes, as: UTF8.self).contains("shutting down"))
        await router.shutdown()
    }

    @Test func anUnwritableStoreIs503AndStoresNothing() async throws {
        let (api, router) = try await Self.api { path in
            // Create the store, then open it read-only.
            try SQLiteStore(path: path).close()
            return try SQLiteStore(path: path, access: .readOnly)
        }
        let health = await api.handle(ServerRequest(method: "GET", path: "/healthz"))
        #expect(health.status == 503)
        let send = await Self.post(api, #"{"id":"ro","title":"x"}"#)
        #expect(send.status == 503, "\(String(decoding: send.bodyBytes, as: UTF8.self))")
        #expect(send.header("Content-Type") == "application/json")
        #expect(try router.store.notification(id: "ro") == nil)
        await router.shutdown()
    }

    @Test func everyResponseOfTheRouteTableIsCounted() async throws {
        let (api, router) = try await Self.api()
        _ = await api.handle(ServerRequest(method: "GET", path: "/nowhere"))
        _ = await api.handle(ServerRequest(method: "DELETE", path: "/healthz"))
        let text = api.metrics.render(outboxPending: 0, devicesByPlatform: [:])
        #expect(text.contains(#"herald_http_requests_total{route="unmatched",code="404"} 1"#))
        #expect(text.contains(#"herald_http_requests_total{route="/healthz",code="405"} 1"#))
        await router.shutdown()
    }
}

/// The handler is a pure function of the request value: random methods, paths, headers and bodies
/// always get a JSON answer below 500 (or a stream), never a crash.
@Suite struct HeraldAPIRandomRequestTests {
    @Test func randomRequestsGetAnAnswer() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        var random = SystemRandomNumberGenerator()
        let methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS", "", "G\u{0}T"]
        let paths = [
            "/", "/healthz", "/metrics", "/v1", "/v1/", "/v1/devices", "/v1/notifications", "/v1/notifications/x",
            "/v1/notifications/x/events", "/v1/notifications/x/action", "/v1/events", "/v1/webpush/vapid-public-key",
            "/v1/channels/hook/hook", "/v1/channels//", "//v1//devices", "/v1/notifications/%00/action", "",
        ]
        let bodies: [[UInt8]] = [
            [], Array("{}".utf8), Array("[]".utf8), Array(#"{"title":"t"}"#.utf8), Array("{\"kind\":\"action\"}".utf8),
            Array(#"{"deviceId":"d","platform":"phone","token":"t"}"#.utf8), Array("nul\u{0}l".utf8),
            (0..<64).map { _ in UInt8.random(in: 0...255) }, Array(String(repeating: "[", count: 500).utf8),
        ]
        let tokens = [nil, ServerHarness.admin, ServerHarness.reader, "hrd_wrong", ""]
        for _ in 0..<1000 {
            var headers: [String: String] = [:]
            if let t = tokens.randomElement(using: &random)! { headers["authorization"] = "Bearer \(t)" }
            if Bool.random(using: &random) { headers["content-type"] = "application/json" }
            var query: [String: String] = [:]
            for key in ["namespace", "limit", "before", "timeout", "since", "wait", "deviceId", "token"]
            where Int.random(in: 0..<4, using: &random) == 0 {
                query[key] = ["0", "-1", "default", "none", "999999999999999999999", "", "x"].randomElement(
                    using: &random)!
            }
            if query["timeout"] != nil { query["timeout"] = "0" }
            let request = ServerRequest(
                method: methods.randomElement(using: &random)!, path: paths.randomElement(using: &random)!,
                query: query, headers: headers, body: bodies.randomElement(using: &random)!)
            let response = await api.handle(request)
            #expect(response.status < 500 || response.status == 503, "\(request) → \(response.status)")
            if case .stream(let s) = response.body {
                s.finish()
            } else if response.status != 204 {
                #expect(response.header("Content-Type") != nil, "\(request)")
            }
        }
        api.beginShutdown()
        await router.shutdown()
    }
}
