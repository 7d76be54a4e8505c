import ChannelAPI
import ChannelSupport
import Foundation
import HeraldChannels
import HeraldCrypto
import Router
import Testing

@testable import HeraldServer

/// `server.relays` and the pure parts of the relay modules (docs/relay-server.md).
@Suite struct RelayConfigTests {
    static func server(_ relays: String, listen: String = "127.0.0.1:8686") throws -> ServerConfig {
        try ServerConfig(ConfigLoader.parse(text(relays, listen: listen), registry: HeraldChannels.registry))
    }

    /// A config whose `server.relays` section is `relays`.
    static func text(_ relays: String, listen: String = "127.0.0.1:8686") -> String {
        """
            version: 1
            channels:
              apns: { type: log }
            routes:
              default:
                - deliver: [apns]
            server:
              listen: \(listen)
              tokens:
                - { name: hub, sha256: \(String(repeating: "a", count: 64)), scopes: [relay] }
              relays:
            \(relays)
            """
    }

    @Test func readsEachRelayWithItsAccessAndLimit() throws {
        let s = try Self.server(
            """
                hapi: { channel: apns, allow: [10.0.0.0/8, "::1"], rate-limit: 600/m, burst: 5 }
                openchamber: { channel: apns, auth: none, max-skew: 2m, max-tokens: 10 }
            """)
        let relays = try RelaysConfig.read(s.relays, loopback: true)
        #expect(relays.map(\.module.name) == ["hapi", "openchamber"])
        #expect(relays[0].access.allow == ["10.0.0.0/8", "::1"])
        #expect(relays[0].ratePerSecond == 10)
        #expect(relays[0].burst == 5)
        #expect(relays[1].access.open)
        let hub = try RelayHub(server: s)
        #expect(hub.protocolName(for: "/v1/push") == "hapi")
        #expect(hub.protocolName(for: "/v1/push/send") == "openchamber")
        #expect(hub.protocolName(for: "/v1/push/register-token") == "openchamber")
        #expect(hub.protocolName(for: "/v1/notifications") == nil)
        #expect(hub.protocolName(method: "GET", for: "/v1/push") == nil)
        #expect(hub.routes.map(\.pattern.label).sorted() == ["/v1/push", "/v1/push/register-token", "/v1/push/send"])
    }

    /// A loopback server whose `relays:` names modules `herald serve` does not know (read unchecked).
    static func relays(_ relays: String) throws -> ServerConfig {
        var server = try Self.server("    hapi: { channel: apns, auth: none }")
        server.relays = try ConfigLoader.parse(text(relays), registry: HeraldChannels.registry).serverNode?.mapping()
            .first { $0.key == "relays" }?.value
        return server
    }

    /// A relay that answers with what it was given: the seam's templated routes and own access.
    struct EchoRelay: InboundRelay {
        var routes: [RelayRoute] {
            [RelayRoute("POST", "/v1/things/{thing}/poke", access: .own), RelayRoute("POST", "/v1/things/{id}/pokes")]
        }
        func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse {
            RelayResponse(200, ["thing": .string(request["thing"]), "path": .string(request.path)])
        }
        static func module(routes: [RelayRoute]? = nil) -> InboundRelayModule {
            InboundRelayModule(name: "echo") { _ in EchoRelay() }
        }
    }

    /// A relay route is a template in the API's one table: `{…}` segments match one segment each,
    /// an API route wins a tie, and two relays of one shape are refused.
    @Test func relayRoutesAreTemplatesInTheOneTable() throws {
        let s = try Self.relays("    echo: { channel: apns, auth: none }")
        let hub = try RelayHub(server: s, modules: InboundRelayModule.builtIn + [EchoRelay.module()])
        #expect(hub.protocolName(for: "/v1/things/lamp/poke") == "echo")
        #expect(hub.protocolName(for: "/v1/things//poke") == nil)
        #expect(hub.protocolName(for: "/v1/things/lamp/poke/x") == nil)
        let routes = hub.routes
        #expect(routes.map(\.pattern.label) == ["/v1/things/{thing}/poke", "/v1/things/{id}/pokes"])
        #expect(routes[0].pattern.match(RoutePattern.segments(of: "/v1/things/lamp/poke")) == ["thing": "lamp"])

        struct Twin: InboundRelay {
            var routes: [RelayRoute] { [RelayRoute("POST", "/v1/things/{other}/poke")] }
            func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse {
                RelayResponse(200, [:])
            }
        }
        let twin = InboundRelayModule(name: "twin") { _ in Twin() }
        let both = try Self.relays("    echo: { channel: apns, auth: none }\n    twin: { channel: apns, auth: none }")
        #expect(throws: ConfigError.self) {
            try RelayHub(server: both, modules: [EchoRelay.module(), twin])
        }
    }

    /// The section is checked with the rest of the config (`herald validate`, start, reload).
    @Test func authNoneIsRefusedOffLoopback() throws {
        #expect(throws: ConfigError.self) {
            try Self.server("    hapi: { channel: apns, auth: none }", listen: "0.0.0.0:8686")
        }
        #expect(try Self.server("    hapi: { channel: apns, auth: none }").relays != nil)
    }

    @Test(arguments: [
        "    pulse-x: { channel: apns }", "    hapi: { auth: token }", "    hapi: { channel: apns, colour: red }",
        "    hapi: { channel: apns, rate-limit: fast }", "    hapi: { channel: apns, burst: 0 }",
        "    openchamber: { channel: apns, max-skew: 2h }", "    hapi: { channel: apns, max-tokens: 3 }",
    ])
    func badSectionsAreConfigErrors(_ relays: String) throws {
        #expect(throws: ConfigError.self) { try Self.server(relays) }
    }

    @Test func relayIsAScope() {
        #expect(APIToken.knownScopes.contains("relay"))
    }

    @Test func allowListMatchesAddressesAndIPv4Blocks() {
        let access = RelayAccess(allow: ["10.0.0.0/8", "192.168.1.7", "::1"])
        #expect(access.allows("10.20.30.40"))
        #expect(access.allows("::ffff:10.1.1.1"))
        #expect(access.allows("192.168.1.7"))
        #expect(access.allows("::1"))
        #expect(!access.allows("192.168.1.8"))
        #expect(!access.allows("11.0.0.1"))
        #expect(!access.allows(""))
        #expect(RelaysConfig.rate("50/s") == 50)
        #expect(RelaysConfig.rate("3600/h") == 1)
        #expect(RelaysConfig.rate("0/s") == nil)
        #expect(RelaysConfig.rate("5") == nil)
    }

    @Test func hapiRequestsAreValidatedBeforeAnythingIsSent() throws {
        let envelope = Base64.encode(Array(repeating: 1, count: 40))
        func parse(_ text: String) throws(HapiRelayServer.Refusal) -> HapiRelayServer.Push {
            try HapiRelayServer.parse(Array(text.utf8))
        }
        let ok = try parse(#"{"platform":"ios","token":"ABCD1234","envelope":"\#(envelope)","priority":5}"#)
        #expect(ok == HapiRelayServer.Push(token: "abcd1234", envelope: envelope, collapseID: nil, priority: 5))
        for (body, code) in [
            ("[]", "invalid_json"), (#"{"token":"ab"}"#, "invalid_request"),
            (#"{"platform":"android","token":"abcd1234","envelope":"\#(envelope)"}"#, "unsupported_platform"),
            (#"{"platform":"ios","token":12,"envelope":"\#(envelope)"}"#, "invalid_token"),
            (#"{"platform":"ios","token":"abcd123","envelope":"\#(envelope)"}"#, "invalid_token"),
            (#"{"platform":"ios","token":"abcd1234","envelope":"AAAA"}"#, "invalid_envelope"),
            (#"{"platform":"ios","token":"abcd1234","envelope":"\#(envelope)","priority":7}"#, "invalid_request"),
            (#"{"platform":"ios","token":"abcd1234","envelope":"\#(envelope)","collapseId":1}"#, "invalid_request"),
        ] {
            #expect(throws: HapiRelayServer.Refusal.self) { try parse(body) }
            do { _ = try parse(body) } catch { #expect(error.code == code && error.status == 400, "\(body)") }
        }
        let huge = Base64.encode(Array(repeating: 1, count: 3100))
        do {
            _ = try HapiRelayServer.prepared(try parse(#"{"platform":"ios","token":"abcd1234","envelope":"\#(huge)"}"#))
            Issue.record("a push over 4 KiB was accepted")
        } catch { #expect(error.status == 413) }
    }

    @Test func upstreamOutcomesMapToTheProtocolsAnswers() {
        let t = DeliveryTarget(device: nil, deliveryId: "d")
        #expect(HapiRelayServer.answer(.delivered(t)).status == 200)
        #expect(HapiRelayServer.answer(.dead(t, status: 410, reason: "Unregistered")).body["code"] == "unregistered")
        let throttled = HapiRelayServer.answer(
            .retry(t, status: 429, reason: "TooManyRequests", retryAfter: .seconds(30)))
        #expect(throttled.status == 429)
        #expect(throttled.headers["Retry-After"] == "30")
        #expect(HapiRelayServer.answer(.retry(t, status: nil, reason: "connect failed")).status == 502)
        #expect(HapiRelayServer.answer(.retry(t, status: 503, reason: "Shutdown")).status == 503)
        #expect(HapiRelayServer.answer(.failed(t, status: 413, reason: "PayloadTooLarge")).status == 413)
        #expect(HapiRelayServer.answer(.failed(t, status: 403, reason: "InvalidProviderToken")).status == 502)
        #expect(HapiRelayServer.answer(.failed(t, status: 400, reason: "BadTopic")).status == 400)
    }

    /// The verifying side checks exactly what Herald's signing side signs (shared signed input).
    @Test func openchamberVerifiesHeraldsOwnSignature() throws {
        let key = try P256PrivateKey()
        let ts: Int64 = 1_790_000_000_000
        let tokens = ["bb22", "aa11aa11"]
        let sig = Base64.urlEncode(
            try key.signature(for: Array(OpenChamberSignedInput.send(ts: ts, tokens: tokens, title: "T").utf8))
                .rawRepresentation)
        let jwk = key.publicKey.jwk
        let body: JSONValue = [
            "tokens": ["aa11aa11", "bb22bb22"], "title": "T", "body": "b", "ts": .number(Double(ts)),
            "publicKeyJwk": ["kty": "EC", "crv": "P-256", "x": .string(jwk.x), "y": .string(jwk.y)],
            "sig": .string(sig),
        ]
        // The token list differs from the signed one: refused.
        #expect(throws: OpenChamberRelayRequest.Refusal.self) {
            try OpenChamberRelayRequest.send(body.canonicalBytes, nowMillis: ts, maxSkewMillis: 1000, maxTokens: 100)
        }
        var good = body.objectValue ?? [:]
        good["tokens"] = ["aa11aa11", "bb22"]
        #expect(throws: OpenChamberRelayRequest.Refusal.self) {
            // "bb22" is too short to be a device token.
            try OpenChamberRelayRequest.send(
                JSONValue.object(good).canonicalBytes, nowMillis: ts, maxSkewMillis: 1000, maxTokens: 100)
        }
        let tokens2 = ["bb22bb22", "aa11aa11"]
        good["tokens"] = .array(tokens2.map { .string($0) })
        good["sig"] = .string(
            Base64.urlEncode(
                try key.signature(for: Array(OpenChamberSignedInput.send(ts: ts, tokens: tokens2, title: "T").utf8))
                    .rawRepresentation))
        let (signed, send) = try OpenChamberRelayRequest.send(
            JSONValue.object(good).canonicalBytes, nowMillis: ts + 900, maxSkewMillis: 1000, maxTokens: 100)
        #expect(signed.serverId == jwk.thumbprint)
        #expect(send.tokens == tokens2)
        #expect(send.env == "production")
        #expect(throws: OpenChamberRelayRequest.Refusal.self) {
            try OpenChamberRelayRequest.send(
                JSONValue.object(good).canonicalBytes, nowMillis: ts + 1001, maxSkewMillis: 1000, maxTokens: 100)
        }
        #expect(throws: OpenChamberRelayRequest.Refusal.self) {
            try OpenChamberRelayRequest.send(
                JSONValue.object(good).canonicalBytes, nowMillis: ts, maxSkewMillis: 1000, maxTokens: 1)
        }
    }
}
