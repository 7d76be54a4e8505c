import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import HeraldMHD
import Router
import Testing

/// Herald serving the relay protocols (docs/relay-server.md), end to end: a hub Herald's `relay` channels
/// and independent Python clients written from the seeds call a relay Herald, which delivers to a
/// loopback HTTP/2 fake APNs.
@Suite("Relay server end to end", .serialized, .stopsFakeHTTPServers)
struct RelayServeTests {
    static let relays = """
            hapi: { channel: apns, allow: [127.0.0.1] }
            openchamber: { channel: apns, auth: none }
        """

    static func hapiDevice(_ id: String = "phone") -> Device {
        Device(
            namespace: "hapi", deviceId: id, platform: "ios",
            fields: ["token": .string(RelayRig.token), "pushKey": .string(Base64.encode(RelayRig.pushKey))])
    }

    static func notification(_ namespace: String) -> HeraldNotification {
        var n = HeraldNotification(title: "Build done")
        n.namespace = namespace
        n.type = "ready"
        n.body = "All green"
        n.tag = "ready-s-1"
        n.data = ["sessionId": "s-1"]
        return n
    }

    /// hapi: the hub's push reaches APNs as exactly the payload and headers Herald's direct hapi-v1
    /// path sends, and the envelope opens to the hub's plaintext; the relay saw only ciphertext.
    @Test func hapiPushReachesAPNsAsTheDirectPathSendsIt() async throws {
        try await RelayRig.with(relays: Self.relays) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(200)
            _ = try await hub.register(Self.hapiDevice())
            let report = try await hub.send(Self.notification("hapi"))
            #expect(report.deliveries.map(\.state) == [.delivered])
            let relayed = try #require(try await rig.apns.requests().first)
            #expect(relayed.method == "POST")
            #expect(relayed.path == "/3/device/\(RelayRig.token)")
            #expect(relayed.httpVersion == "2")
            #expect(relayed.header("apns-push-type") == "alert")
            #expect(relayed.header("apns-priority") == "10")
            #expect(relayed.header("apns-expiration") == "0")
            #expect(relayed.header("apns-topic") == "com.example.app")
            #expect(relayed.header("apns-collapse-id") == "ready-s-1")
            #expect(relayed.header("authorization")?.hasPrefix("bearer ey") == true)
            let body = try JSONValue.parse(relayed.body)
            let envelope = try #require(body["hapi"]?["e"]?.stringValue)
            #expect(body == HapiPayload.apnsBody(envelope: envelope))
            let opened = try HapiPayload.open(envelope: envelope, key: RelayRig.pushKey)
            #expect(opened == HapiPayload.plaintext(for: Self.notification("hapi")))

            // The direct path, same notification, same APNs: the same headers and body shape.
            try await rig.apns.reset()
            try await rig.apnsAnswers(200)
            var device = Self.hapiDevice("direct-phone")
            device.namespace = "direct"
            _ = try await rig.relay.register(device)
            _ = try await rig.relay.send(Self.notification("direct"))
            let direct = try #require(try await rig.apns.requests().first)
            let names = ["apns-push-type", "apns-priority", "apns-expiration", "apns-topic", "apns-collapse-id"]
            #expect(names.map { direct.header($0) } == names.map { relayed.header($0) })
            let directBody = try JSONValue.parse(direct.body)
            let directEnvelope = try #require(directBody["hapi"]?["e"]?.stringValue)
            #expect(directBody == HapiPayload.apnsBody(envelope: directEnvelope))
            #expect(!rig.relayLog.text.contains(envelope))
            #expect(!rig.relayLog.text.contains(RelayRig.token))
        }
    }

    /// Every outcome of docs/channels/relay.md comes out the same on the hub's side through the relay.
    @Test(
        arguments: [
            (200, nil, DeliveryState.delivered), (410, "Unregistered", .dead), (400, "BadDeviceToken", .dead),
            (429, "TooManyRequests", .retry), (503, "ServiceUnavailable", .retry), (500, "InternalServerError", .retry),
            (413, "PayloadTooLarge", .failed), (400, "BadCollapseId", .failed),
        ] as [(Int, String?, DeliveryState)])
    func hapiOutcomesComeThroughTheRelay(status: Int, reason: String?, expected: DeliveryState) async throws {
        try await RelayRig.with(relays: Self.relays) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(status, reason, headers: status == 429 ? ["retry-after": "7"] : [:])
            _ = try await hub.register(Self.hapiDevice())
            let report = try await hub.send(Self.notification("hapi"))
            #expect(report.deliveries.map(\.state) == [expected], "\(report.deliveries.map(\.reason))")
            #expect(try await rig.apns.requests().count == 1, "one delivery per accepted request, never two")
        }
    }

    /// The Python client from hapi's contract: 200 {ok:true}, 410 unregistered, 429 with Retry-After,
    /// 400 with a reason for bad input (nothing sent), 413 too large.
    @Test func hapiAnswersAnIndependentClient() async throws {
        try await RelayRig.with(relays: Self.relays, withHub: false) { rig in
            let key = Base64.encode(RelayRig.pushKey)
            func run(_ mode: String) throws -> JSONValue {
                try RelayRig.script("hapi_relay_client.py", [rig.base, RelayRig.token, key, "ready-s-1", mode])[0]
            }
            try await rig.apnsAnswers(200)
            let ok = try run("push")
            #expect(ok["status"] == 200)
            #expect(ok["body"] == ["ok": true])
            let sent = try #require(try await rig.apns.requests().first)
            #expect(try JSONValue.parse(sent.body)["hapi"]?["e"] == ok["envelope"])
            let plaintext = try HapiPayload.open(
                envelope: ok["envelope"]?.stringValue ?? "", key: RelayRig.pushKey)
            #expect(String(decoding: plaintext, as: UTF8.self) == ok["plaintext"]?.stringValue)

            try await rig.apnsAnswers(410, "Unregistered")
            let gone = try run("push")
            #expect(gone["status"] == 410)
            #expect(gone["body"] == ["ok": false, "code": "unregistered"])

            try await rig.apnsAnswers(429, "TooManyRequests", headers: ["retry-after": "9"])
            let throttled = try run("push")
            #expect(throttled["status"] == 429)
            #expect(throttled["retryAfter"] == "9")

            try await rig.apnsAnswers(200)
            for (mode, code) in [
                ("bad-base64", "invalid_envelope"), ("bad-token", "invalid_token"),
                ("bad-platform", "unsupported_platform"), ("wrong-type", "invalid_request"),
            ] {
                let r = try run(mode)
                #expect(r["status"] == 400, "\(mode)")
                #expect(r["body"]?["code"]?.stringValue == code, "\(mode)")
                #expect(r["body"]?["error"]?.stringValue?.isEmpty == false, "\(mode)")
            }
            let large = try run("too-large")
            #expect(large["status"] == 413)
            #expect(try await rig.apns.requests().isEmpty, "bad input sends nothing")

            let metrics = try await RawHTTP.request(port: rig.server.port, "GET", "/metrics")
            for line in [
                #"herald_relay_requests_total{protocol="hapi",code="200"} 1"#,
                #"herald_relay_requests_total{protocol="hapi",code="400"} 4"#,
                #"herald_relay_requests_total{protocol="hapi",code="410"} 1"#,
                #"herald_relay_pushes_total{protocol="hapi",outcome="delivered"} 1"#,
                #"herald_relay_pushes_total{protocol="hapi",outcome="dead"} 1"#,
                #"herald_relay_pushes_total{protocol="hapi",outcome="retry"} 1"#,
            ] {
                #expect(metrics.text.contains(line + "\n"), "\(line)")
            }
        }
    }

    /// Access: a token without scope relay is refused, a relay-scoped token is let in from an address
    /// off the allow-list; without either, 401. The relay's rate limit answers 429 with Retry-After.
    @Test func hapiAccessAndRateLimit() async throws {
        let relays = """
                hapi: { channel: apns, allow: [10.0.0.0/8], rate-limit: 1/h, burst: 2 }
            """
        try await RelayRig.with(relays: relays, withHub: false) { rig in
            try await rig.apnsAnswers(200)
            let body = """
                {"platform":"ios","token":"\(RelayRig.token)","envelope":"\(Base64.encode(Array(repeating: 7, count: 60)))"}
                """
            func push(_ token: String?) async throws -> RawResponse {
                try await RawHTTP.request(port: rig.server.port, "POST", "/v1/push", token: token, json: body)
            }
            #expect(try await push(nil).status == 401)
            #expect(try await push(RelayRig.readToken).status == 403)
            #expect(try await push(RelayRig.relayToken).status == 200)
            #expect(try await push(RelayRig.relayToken).status == 200)
            let third = try await push(RelayRig.relayToken)
            #expect(third.status == 429)
            #expect(third.headers["retry-after"] != nil)
            #expect(try await rig.apns.requests().count == 2)
            let get = try await RawHTTP.request(port: rig.server.port, "GET", "/v1/push", token: RelayRig.relayToken)
            #expect(get.status == 405)
            // A stopping server answers 503 with Retry-After (transient for every client), not 404.
            rig.server.api.beginShutdown()
            let stopping = await rig.server.api.handle(
                ServerRequest(
                    method: "POST", path: "/v1/push", headers: ["authorization": "Bearer \(RelayRig.relayToken)"]))
            #expect(stopping.status == 503)
            #expect(stopping.headers.contains { $0.name == "Retry-After" })
        }
    }

    /// openchamber, hub to relay: the hub's channel registers the device (a binding), then sends; the
    /// push reaches the device's environment with the generic alert, badge and sessionId; a dead token
    /// comes back `drop` and the hub removes the device.
    @Test func openchamberHubToRelay() async throws {
        try await RelayRig.with(relays: Self.relays) { rig in
            let hub = try #require(rig.hub)
            try await rig.apnsAnswers(200)
            let device = Device(
                namespace: "oc", deviceId: "ipad", platform: "ios",
                fields: ["token": .string(RelayRig.token), "environment": "sandbox"])
            _ = try await hub.register(device)
            var n = Self.notification("oc")
            n.badge = 4
            let report = try await hub.send(n)
            #expect(report.deliveries.map(\.state) == [.delivered], "\(report.deliveries.map(\.reason))")
            let sent = try #require(try await rig.apns.requests().first)
            #expect(sent.path == "/sandbox/3/device/\(RelayRig.token)")
            let body = try JSONValue.parse(sent.body)
            #expect(body["aps"]?["alert"]?["title"]?.stringValue == GenericContent.title(for: "ready"))
            #expect(body["aps"]?["badge"] == 4)
            #expect(body["sessionId"] == "s-1")
            #expect(sent.header("apns-collapse-id") == "ready-s-1")

            try await rig.apnsAnswers(410, "Unregistered")
            let dead = try await hub.send(Self.notification("oc"))
            #expect(dead.deliveries.map(\.state) == [.dead])
            #expect(try hub.devices(namespace: "oc").isEmpty)
        }
    }

    /// openchamber against a client written from the seed with another ECDSA implementation: register
    /// and send; then abuse: a token bound to another server, a forged and a tampered signature, a
    /// stale ts, a replay. Each gets its 4xx and nothing reaches APNs.
    @Test func openchamberVerifiesAnIndependentClient() async throws {
        try await RelayRig.with(relays: Self.relays, withHub: false) { rig in
            try await rig.apnsAnswers(200)
            let flow = try RelayRig.script("openchamber_relay_client.py", [rig.base, "flow", RelayRig.token])
            #expect(flow[0]["status"] == 200)
            #expect(flow[1]["status"] == 200)
            #expect(flow[1]["body"] == ["results": [["token": .string(RelayRig.token), "ok": true, "drop": false]]])
            #expect(try await rig.apns.requests().count == 1)

            try await rig.apns.reset()
            try await rig.apnsAnswers(200)
            let other = String(repeating: "cd34", count: 16)
            let token = String(repeating: "ef56", count: 16)
            let lines = try RelayRig.script("openchamber_relay_client.py", [rig.base, "abuse", token, other])
            var byStep: [String: JSONValue] = [:]
            for l in lines { if let s = l["step"]?.stringValue { byStep[s] = l } }
            func expect(_ step: String, _ status: Int, _ code: String?) {
                #expect(byStep[step]?["status"]?.intValue == status, "\(step): \(String(describing: byStep[step]))")
                if let code { #expect(byStep[step]?["body"]?["code"]?.stringValue == code, "\(step)") }
            }
            expect("register-a", 200, nil)
            expect("register-b-same-token", 409, "token_bound_elsewhere")
            expect("register-b-other", 200, nil)
            expect("send-b-to-a-token", 403, "token_not_bound")
            expect("forged", 401, "bad_signature")
            expect("tampered", 401, "bad_signature")
            expect("stale", 401, "stale")
            expect("first", 200, nil)
            expect("replayed", 409, "replayed")
            #expect(try await rig.apns.requests().count == 1, "only the one good send reached APNs")
            #expect(!rig.relayLog.text.contains(token))
        }
    }
}
