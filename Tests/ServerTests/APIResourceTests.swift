import ChannelAPI
import Foundation
import HeraldChannels
import HeraldMHD
import HeraldServer
import Router
import RouterTesting
import Testing

/// A test channel that is not Web Push and provides a public key, offered under its own command
/// and path.
struct KeyedChannel: Channel, PublicKeyProviding {
    static let offer = PublicKeyOffer(command: "test-key", path: "/v1/test/public-key")

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        request.targets.map { DeliveryResult(deliveryId: $0.deliveryId, deviceId: nil, outcome: .delivered) }
    }

    func publicKey(rotate: Bool) async throws -> String { rotate ? "key-2" : "key-1" }

    var publicKeyOffer: PublicKeyOffer? { KeyedChannel.offer }

    /// A `keyed` channel configured with `key: none` has none.
    var hasPublicKey: Bool

    static var factory: ChannelFactory {
        ChannelFactory(type: "keyed", defaultPlatforms: []) { config, _ throws(ConfigError) in
            KeyedChannel(hasPublicKey: try config.string("key") != "none")
        }
    }
}

/// Issue 31 §4: the API's resources behind one routing and auth layer, and public keys served for
/// any channel that provides one (no `webpush` special case).
@Suite struct APIResourceTests {
    /// The API over the harness's router (fcm without a key, Web Push) with two `keyed` channels.
    static func withAPI(_ body: (HeraldAPI) async throws -> Void) async throws {
        try await withRouter { router in try await body(HeraldAPI(router: router, server: ServerHarness.defaults)) }
    }

    /// The router alone (the lookups of `herald keys`), shut down afterwards.
    static func withRouter(_ body: (Router) async throws -> Void) async throws {
        let (router, _, home) = try await ServerHarness.makeRouter(
            factories: [KeyedChannel.factory],
            channels: "  keyless: { type: keyed, key: none }\n  first: { type: keyed }\n  second: { type: keyed }")
        defer { try? FileManager.default.removeItem(atPath: home) }
        var failure: (any Error)?
        do { try await body(router) } catch { failure = error }
        await router.shutdown()
        if let failure { throw failure }
    }

    static func get(
        _ api: HeraldAPI, _ path: String, query: [String: String] = [:], token: String? = ServerHarness.reader,
        method: String = "GET"
    ) async -> (status: Int, json: JSONValue?, response: ServerResponse) {
        var headers: [String: String] = [:]
        if let token { headers["authorization"] = "Bearer \(token)" }
        let response = await api.handle(ServerRequest(method: method, path: path, query: query, headers: headers))
        return (response.status, try? JSONValue.parse(response.bodyBytes), response)
    }

    @Test func anyChannelThatProvidesAKeyIsServedByName() async throws {
        try await Self.withAPI { api in
            let second = await Self.get(api, "/v1/channels/second/public-key")
            #expect(second.status == 200)
            #expect(second.json == ["publicKey": "key-1", "channel": "second"])
            // Web Push by name too, with the key its own path serves.
            let webpush = await Self.get(api, "/v1/channels/webpush/public-key")
            let legacy = await Self.get(api, "/v1/webpush/vapid-public-key")
            #expect(webpush.status == 200 && legacy.status == 200)
            #expect(legacy.json?["channel"] == "webpush")
            #expect(legacy.json?["publicKey"] == webpush.json?["publicKey"])
            // A channel without a key, and no channel: 404 saying which.
            let fcm = await Self.get(api, "/v1/channels/fcm/public-key")
            #expect(fcm.status == 404)
            #expect(fcm.json?["error"]?["message"] == "channel fcm does not provide a public key")
            let keyless = await Self.get(api, "/v1/channels/keyless/public-key")
            #expect(keyless.json?["error"]?["message"] == "channel keyless does not provide a public key")
            let none = await Self.get(api, "/v1/channels/nope/public-key")
            #expect(none.status == 404)
            #expect(none.json?["error"]?["message"] == "no channel nope")
            // Scope read or devices; a token is needed.
            #expect(await Self.get(api, "/v1/channels/first/public-key", token: nil).status == 401)
            #expect(await Self.get(api, "/v1/channels/first/public-key", token: ServerHarness.sender).status == 403)
            // HEAD like GET; POST is still the channel's webhook (the keyed channel takes none).
            #expect(await Self.get(api, "/v1/channels/first/public-key", method: "HEAD").status == 200)
            let post = await Self.get(api, "/v1/channels/first/public-key", token: nil, method: "POST")
            #expect(post.status == 404)
            #expect(post.json?["error"]?["message"] == "channel first takes no public-key webhook")
            let put = await Self.get(api, "/v1/channels/first/public-key", method: "PUT")
            #expect(put.status == 405)
            #expect(put.response.header("Allow") == "GET, POST")
        }
    }

    @Test func aChannelsOfferedPathServesTheFirstOrTheNamedChannel() async throws {
        try await Self.withAPI { api in
            let first = await Self.get(api, "/v1/test/public-key")
            #expect(first.status == 200)
            #expect(first.json == ["publicKey": "key-1", "channel": "first"])
            let named = await Self.get(api, "/v1/test/public-key", query: ["channel": "second"])
            #expect(named.json?["channel"] == "second")
            let wrong = await Self.get(api, "/v1/test/public-key", query: ["channel": "webpush"])
            #expect(wrong.status == 404)
            #expect(wrong.json?["error"]?["message"] == "no keyed channel named webpush")
            #expect(await Self.get(api, "/v1/test/public-key", token: nil).status == 401)
            // Counted under the path the channel declared.
            let text = api.metrics.render(outboxPending: 0, devicesByPlatform: [:])
            #expect(text.contains(#"herald_http_requests_total{route="/v1/test/public-key",code="200"} 2"#))
            // A path no channel offers is an unknown route.
            #expect(await Self.get(api, "/v1/other/public-key").status == 404)
        }
    }

    @Test func theKeysCommandsLookUpByOfferAndByName() async throws {
        try await Self.withRouter { router in
            let byOffer = try PublicKeyLookup.offering(
                { $0.command == "test-key" }, named: nil, describing: "herald keys test-key", in: router
            ).get()
            #expect(byOffer.name == "first" && byOffer.offer == KeyedChannel.offer)
            let vapid = try PublicKeyLookup.offering(
                { $0.command == "vapid" }, named: nil, describing: "herald keys vapid", in: router
            ).get()
            #expect(vapid.name == "webpush" && vapid.offer.jsonField == "applicationServerKey")
            if case .failure(let e) = PublicKeyLookup.offering(
                { $0.command == "nothing" }, named: nil, describing: "herald keys nothing", in: router)
            {
                #expect(e.description == "the config has no channel offering herald keys nothing")
            } else {
                Issue.record("an offer no channel makes was found")
            }
            if case .success(let p) = PublicKeyLookup.channel(named: "second", in: router) {
                #expect(try await p.publicKey(rotate: true) == "key-2")
            } else {
                Issue.record("channel second was not found")
            }
        }
    }
}

/// A resource of its own joins through `HeraldAPI(resources:)` and gets the shared checks: 404 and
/// 405, the body limit, a custom access check with the rate limit, the 422 subject, metrics.
struct EchoAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", RoutePattern("/v1/echo/{word}"),
                access: .custom { request, _ in
                    guard request.header("x-allowed") == "yes" else { throw APIError(403, "forbidden", "not allowed") }
                    return APIToken(name: "echo-client", sha256: "", namespaces: [], scopes: [])
                }, subject: "echo", maxBody: 8
            ) { _, call in
                if call["word"] == "invalid" { throw ValidationError(field: "word", "is invalid") }
                return ServerResponse(status: 200, body: .bytes(Array(call["word"].utf8) + call.request.body))
            },
            APIRoute(
                "POST", RoutePattern("/v1/plain"), access: .token(["send"]),
                errorResponse: EchoAPI.okFalse
            ) { _, _ in throw APIError(413, "too_large", "the envelope is too large") },
        ]
    }

    /// A relay-style error body: `{"ok":false,"code":…}`, the error's status and headers.
    @Sendable static func okFalse(_ e: APIError) -> ServerResponse {
        ServerResponse(
            status: e.status, headers: e.headers,
            body: .bytes(JSONValue.object(["ok": false, "code": .string(e.code)]).canonicalBytes))
    }
}

@Suite struct APIRouteTableTests {
    @Test func aNewResourceGetsTheSharedChecks() async throws {
        let (router, _, home) = try await ServerHarness.makeRouter()
        defer { try? FileManager.default.removeItem(atPath: home) }
        var settings = ServerHarness.defaults
        settings.burst = 2
        settings.ratePerSecond = 0.001
        let api = HeraldAPI(
            router: router, server: settings, now: { 1000 }, resources: HeraldAPI.resources + [EchoAPI()])
        func echo(_ word: String, body: String = "", allowed: Bool = true, method: String = "POST") async
            -> ServerResponse
        {
            await api.handle(
                ServerRequest(
                    method: method, path: "/v1/echo/\(word)", headers: allowed ? ["x-allowed": "yes"] : [:],
                    body: Array(body.utf8)))
        }
        #expect(await echo("x", allowed: false).status == 403)
        let ok = await echo("hi", body: "!")
        #expect(ok.status == 200 && ok.bodyBytes == Array("hi!".utf8))
        #expect(await echo("hi", body: "123456789").status == 413)
        let get = await echo("hi", method: "GET")
        #expect(get.status == 405 && get.header("Allow") == "POST")
        // Refused before the check (413, 405) or by it (403): nothing was counted. The third call
        // the check let through is over the caller's burst of 2.
        #expect(await echo("again").status == 200)
        let limited = await echo("third")
        #expect(limited.status == 429 && limited.header("Retry-After") != nil)
        // The built-in routes are unchanged beside it.
        #expect(await api.handle(ServerRequest(method: "GET", path: "/healthz")).status == 200)
        let text = api.metrics.render(outboxPending: 0, devicesByPlatform: [:])
        #expect(text.contains(#"herald_http_requests_total{route="/v1/echo/{word}",code="413"} 1"#))
        await router.shutdown()
    }

    @Test func aRouteRendersItsErrorsInItsOwnShape() async throws {
        let (router, _, home) = try await ServerHarness.makeRouter()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let api = HeraldAPI(router: router, server: ServerHarness.defaults, resources: [EchoAPI()])
        // The shared check's 401 keeps its status and WWW-Authenticate, in the route's body.
        let anonymous = await api.handle(ServerRequest(method: "POST", path: "/v1/plain"))
        #expect(anonymous.status == 401 && anonymous.header("WWW-Authenticate") == "Bearer")
        #expect(try JSONValue.parse(anonymous.bodyBytes) == ["ok": false, "code": "unauthorized"])
        let handled = await api.handle(
            ServerRequest(
                method: "POST", path: "/v1/plain", headers: ["authorization": "Bearer \(ServerHarness.sender)"]))
        #expect(handled.status == 413)
        #expect(try JSONValue.parse(handled.bodyBytes) == ["ok": false, "code": "too_large"])
        // A 405 belongs to no route: the API's shape.
        let get = await api.handle(ServerRequest(method: "GET", path: "/v1/plain"))
        #expect(get.status == 405)
        #expect(try JSONValue.parse(get.bodyBytes)["error"]?["code"] == "method_not_allowed")
        await router.shutdown()
    }

    @Test func aValidationErrorIsA422OfTheRoutesSubject() async throws {
        let (router, _, home) = try await ServerHarness.makeRouter()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let api = HeraldAPI(router: router, server: ServerHarness.defaults, resources: [EchoAPI()])
        let invalid = await api.handle(
            ServerRequest(method: "POST", path: "/v1/echo/invalid", headers: ["x-allowed": "yes"]))
        #expect(invalid.status == 422)
        let json = try JSONValue.parse(invalid.bodyBytes)
        #expect(json["error"]?["code"] == "invalid_echo" && json["error"]?["field"] == "word")
        // Only the resources given are served.
        #expect(await api.handle(ServerRequest(method: "GET", path: "/healthz")).status == 404)
        // A path is matched against the templates of its own number of segments: one more or one
        // fewer, an empty variable, or a trailing slash is no route; the two lengths served stay apart.
        for path in ["/v1/echo/hi/more", "/v1/echo", "/v1/echo/", "/v1/plain/", "/v1/plain/x", "/v1"] {
            let r = await api.handle(ServerRequest(method: "POST", path: path, headers: ["x-allowed": "yes"]))
            #expect(r.status == 404, "\(path)")
        }
        #expect(
            await api.handle(ServerRequest(method: "POST", path: "/v1/echo/plain", headers: ["x-allowed": "yes"]))
                .bodyBytes == Array("plain".utf8))
        await router.shutdown()
    }
}
