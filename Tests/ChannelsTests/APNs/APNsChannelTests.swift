import ChannelAPI
import ChannelSupport
import Foundation
import HeraldChannels
import HeraldCrypto
import HeraldHTTP
import HeraldHTTPTesting
import RouterTesting
import Testing

@testable import APNsChannel

/// The channel over an in-process scripted transport (production and sandbox endpoints are two
/// scripted hosts); what it sends is checked on the recorded requests.
@Suite("APNs channel")
struct APNsChannelTests {
    static let production = "https://production.apns.test"
    static let sandbox = "https://sandbox.apns.test"

    struct Setup {
        let channel: APNsChannel
        let key: P256PrivateKey
        let http: ScriptedTransport
        let clock: ManualClock
        let sink: RecordingLogSink
        let state: InMemoryChannelState
        let dir: URL

        /// The requests sent to the production endpoint, in order.
        var production: [HTTPRequest] { http.requests.filter { $0.url.hasPrefix(APNsChannelTests.production + "/") } }
        /// The requests sent to the sandbox endpoint, in order.
        var sandbox: [HTTPRequest] { http.requests.filter { $0.url.hasPrefix(APNsChannelTests.sandbox + "/") } }

        func stop() { try? FileManager.default.removeItem(at: dir) }
    }

    /// A channel on a scripted transport; without `sandbox` the sandbox endpoint refuses connections.
    func setUp(extraYAML: String = "", sandbox: Bool = false) throws -> Setup {
        let dir = try APNsTestSupport.temporaryDirectory()
        let (key, p8) = try APNsTestSupport.writeP8(in: dir)
        let http = ScriptedTransport()
        if !sandbox { http.route(Self.sandbox + "/", [.error(.connectFailed, "connection refused")]) }
        let clock = ManualClock()
        let sink = RecordingLogSink()
        let state = InMemoryChannelState()
        let yaml = """
            type: apns
            key-p8: \(p8)
            key-id: TESTKEY123
            team-id: TEAM123456
            topic: com.example.app
            endpoints: { production: "\(Self.production)", sandbox: "\(Self.sandbox)" }
            \(extraYAML)
            """
        let config = try APNsTestSupport.config(yaml)
        let context = APNsTestSupport.context(http: http, clock: clock, sink: sink, state: state)
        let made = try APNsChannel.factory.make(config, context)
        try config.finish()
        let channel = try #require(made as? APNsChannel, "factory did not make an APNsChannel")
        return Setup(channel: channel, key: key, http: http, clock: clock, sink: sink, state: state, dir: dir)
    }

    func reasonResponse(_ status: Int, _ reason: String, extra: String = "") -> ScriptedResponse {
        .json(status, "{\"reason\":\"\(reason)\"\(extra)}", headers: ["apns-id": "SERVER-ID"])
    }

    @Test func deliversWithHeadersAndPayload() async throws {
        let s = try setUp()
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [.json(200, "", headers: ["apns-id": "SERVER-ID-1"])])
        let deliveryId = "123e4567-e89b-12d3-a456-4266554400a0"
        let n = HeraldNotification(
            type: "permission-request", title: "Permission Request", body: "rm -rf build",
            data: ["sessionId": "5f0c"], ttl: 3600)
        let target = APNsTestSupport.target(
            APNsTestSupport.device("iphone", token: "abcd01"), deliveryId: deliveryId)
        let results = await s.channel.deliver(DeliveryRequest(notification: n, targets: [target], pendingBadge: 2))
        #expect(results.count == 1)
        #expect(results.first?.outcome == .delivered)
        #expect(results.first?.status == 200)
        #expect(results.first?.providerMessageId == "SERVER-ID-1")
        let requests = s.production
        #expect(requests.count == 1)
        let r = try #require(requests.first)
        #expect(r.method == "POST")
        #expect(r.path == "/3/device/abcd01")
        #expect(r.header("apns-push-type") == "alert")
        #expect(r.header("apns-topic") == "com.example.app")
        #expect(r.header("apns-priority") == "10")
        #expect(r.header("apns-expiration") == String(s.clock.now().secondsSince1970 + 3600))
        #expect(r.header("apns-collapse-id") == "permission-request-5f0c")
        #expect(r.header("apns-id") == deliveryId)
        let auth = try #require(r.header("authorization"))
        #expect(auth.hasPrefix("bearer "))
        let claims = try JSONValue.parse(try JWS.verifyES256(String(auth.dropFirst(7)), publicKey: s.key.publicKey))
        #expect(claims == ["iss": "TEAM123456", "iat": .number(Double(s.clock.now().secondsSince1970))])
        let body = try JSONValue.parse(r.body)
        #expect(body["aps"]?["alert"]?["title"] == "Permission Request")
        #expect(body["aps"]?["badge"] == 2)
        #expect(body["sessionId"] == "5f0c")

        // The token is reused by the next batch.
        _ = await s.channel.deliver(DeliveryRequest(notification: n, targets: [target]))
        let again = s.production
        #expect(again.count == 2)
        #expect(again.last?.header("authorization") == auth)
        #expect(again.last?.header("apns-id") == deliveryId)
    }

    @Test func outcomePerReason() async throws {
        let s = try setUp()
        defer { s.stop() }
        let cases: [(String, ScriptedResponse, DeliveryOutcome)] = [
            ("a001", .json(200, "", headers: ["apns-id": "OK-ID"]), .delivered),
            ("a002", reasonResponse(410, "Unregistered", extra: ",\"timestamp\":1700000000000"), .dead),
            ("a003", reasonResponse(400, "BadDeviceToken"), .dead),
            ("a004", reasonResponse(400, "DeviceTokenNotForTopic"), .failed),
            ("a005", reasonResponse(403, "InvalidProviderToken"), .failed),
            ("a006", reasonResponse(403, "MissingProviderToken"), .failed),
            ("a007", .json(429, "{\"reason\":\"TooManyRequests\"}", headers: ["retry-after": "30"]), .retry),
            ("a008", reasonResponse(500, "InternalServerError"), .retry),
            ("a009", reasonResponse(503, "ServiceUnavailable"), .retry),
            ("a00a", reasonResponse(400, "BadCollapseId"), .failed),
            ("a00b", reasonResponse(413, "PayloadTooLarge"), .failed),
            ("a00c", reasonResponse(400, "BrandNewReason"), .failed),
            ("a00d", reasonResponse(410, "ExpiredToken"), .dead),
        ]
        for (token, response, _) in cases { s.http.route(Self.production + "/3/device/\(token)", [response]) }
        // The sandbox endpoint of this setup refuses connections: a refused connection is retried.
        let unreachable = APNsTestSupport.target(
            APNsTestSupport.device("d-refused", token: "a0ff", environment: "sandbox"))
        let targets = cases.map { APNsTestSupport.target(APNsTestSupport.device("d-\($0.0)", token: $0.0)) }
        let all = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "hi"), targets: targets + [unreachable]))
        let refused = try #require(all.first { $0.deviceId == "d-refused" })
        #expect(refused.outcome == .retry)
        #expect(refused.status == nil)
        #expect(s.sandbox.map(\.path) == ["/3/device/a0ff"])
        let results = all.filter { $0.deviceId != "d-refused" }
        let byDevice = Dictionary(uniqueKeysWithValues: results.map { ($0.deviceId ?? "", $0) })
        #expect(results.count == cases.count)
        for (token, response, outcome) in cases {
            let r = try #require(byDevice["d-\(token)"])
            #expect(r.outcome == outcome, "\(token) \(String(describing: response.status))")
            #expect(r.status == response.status)
        }
        #expect(byDevice["d-a001"]?.providerMessageId == "OK-ID")
        #expect(byDevice["d-a007"]?.retryAfter == .seconds(30))
        #expect(byDevice["d-a007"]?.reason == "TooManyRequests")
        #expect(byDevice["d-a002"]?.reason == "Unregistered")
        #expect(byDevice["d-a002"]?.details["timestamp"] == "1700000000000")
        #expect(byDevice["d-a00c"]?.reason == "BrandNewReason")
        #expect(byDevice["d-a004"]?.reason == "DeviceTokenNotForTopic")
        #expect(
            results.filter { $0.outcome == .dead }.compactMap(\.deviceId).sorted() == [
                "d-a002", "d-a003", "d-a00d",
            ])
        // Config errors are logged at error level, without the JWT or device tokens.
        let errors = s.sink.all.filter { $0.level == .error }
        #expect(errors.contains { $0.fields["reason"] == "InvalidProviderToken" })
        #expect(errors.contains { $0.fields["reason"] == "DeviceTokenNotForTopic" })
        let jwt = try #require(s.production.first?.header("authorization")).dropFirst(7)
        #expect(!s.sink.text.contains(String(jwt)))
        #expect(!s.sink.text.contains(String(jwt.split(separator: ".").last ?? "")))
        for (token, _, _) in cases { #expect(!s.sink.text.contains("/3/device/\(token)")) }
        #expect(!s.sink.text.contains("BEGIN PRIVATE KEY"))
    }

    @Test func expiredProviderTokenRenewsAndRetriesOnce() async throws {
        let s = try setUp()
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [.json(200, "", headers: ["apns-id": "X"])])
        let warmup = APNsTestSupport.target(APNsTestSupport.device("warm", token: "ee01"))
        _ = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "a"), targets: [warmup]))
        s.clock.advance(by: .seconds(30 * 60))
        s.http.reset()
        s.http.route(
            Self.production + "/3/device/bb01",
            [reasonResponse(403, "ExpiredProviderToken"), .json(200, "", headers: ["apns-id": "Y"])])
        s.http.route(Self.production + "/3/device/bb02", [reasonResponse(403, "ExpiredProviderToken")])
        let t1 = APNsTestSupport.target(APNsTestSupport.device("one", token: "bb01"))
        let t2 = APNsTestSupport.target(APNsTestSupport.device("two", token: "bb02"))
        let r1 = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "b"), targets: [t1]))
        #expect(r1.first?.outcome == .delivered)
        #expect(r1.first?.providerMessageId == "Y")
        let sent = s.production.filter { $0.path == "/3/device/bb01" }
        try #require(sent.count == 2)
        #expect(sent[0].header("authorization") != sent[1].header("authorization"))
        #expect(sent[0].header("apns-id") == sent[1].header("apns-id"))
        // A second ExpiredProviderToken after renewing fails; it does not loop.
        let r2 = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "c"), targets: [t2]))
        #expect(r2.first?.outcome == .failed)
        #expect(s.production.filter { $0.path == "/3/device/bb02" }.count == 2)
    }

    @Test func environmentRouting() async throws {
        let s = try setUp(sandbox: true)
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [.json(200, "", headers: ["apns-id": "P"])])
        s.http.route(Self.sandbox + "/3/device/", [.json(200, "", headers: ["apns-id": "S"])])
        let prod = APNsTestSupport.target(APNsTestSupport.device("prod", token: "cc01"))
        let explicitProd = APNsTestSupport.target(
            APNsTestSupport.device("prod2", token: "cc03", environment: "production"))
        let dev = APNsTestSupport.target(APNsTestSupport.device("dev", token: "cc02", environment: "sandbox"))
        let results = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "x"), targets: [prod, dev, explicitProd]))
        #expect(results.allSatisfy { $0.outcome == .delivered })
        #expect(Set(s.production.map(\.path)) == ["/3/device/cc01", "/3/device/cc03"])
        #expect(s.sandbox.map(\.path) == ["/3/device/cc02"])
        let byId = Dictionary(uniqueKeysWithValues: results.map { ($0.deviceId ?? "", $0) })
        #expect(byId["dev"]?.providerMessageId == "S")
    }

    @Test func forceEnvironmentAndDefault() async throws {
        let s = try setUp(extraYAML: "environment: sandbox\nforce-environment: production", sandbox: true)
        defer { s.stop() }
        #expect(s.channel.configuration.environment == .sandbox)
        #expect(s.channel.configuration.forceEnvironment == .production)
        s.http.route(Self.production + "/3/device/", [.json(200, "")])
        let dev = APNsTestSupport.target(APNsTestSupport.device("dev", token: "dd02", environment: "sandbox"))
        let plain = APNsTestSupport.target(APNsTestSupport.device("plain", token: "dd01"))
        _ = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "x"), targets: [dev, plain]))
        #expect(s.production.count == 2)
        #expect(s.sandbox.count == 0)
        // Without force, a device without environment uses the channel default.
        let config = APNsConfiguration(keyID: "K", teamID: "T", topic: "t", environment: .sandbox)
        #expect(config.environment(for: APNsTestSupport.device("x", token: "aa")) == .sandbox)
        #expect(
            config.environment(for: APNsTestSupport.device("x", token: "aa", environment: "production")) == .production)
        #expect(config.url(environment: .production, token: "aa") == "https://api.push.apple.com/3/device/aa")
        #expect(config.url(environment: .sandbox, token: "aa") == "https://api.sandbox.push.apple.com/3/device/aa")
    }

    @Test func hapiBodyDecryptsToCanonicalPlaintext() async throws {
        let s = try setUp(extraYAML: "encryption: hapi-v1")
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [.json(200, "")])
        let key = Array(UInt8(0)...UInt8(31))
        let device = APNsTestSupport.device("iphone", token: "ef01", pushKey: key)
        // validateRegistration refuses devices without a valid pushKey.
        #expect(try await s.channel.validateRegistration(device) == device)
        await #expect(throws: ValidationError.self) {
            try await s.channel.validateRegistration(APNsTestSupport.device("x", token: "ef02"))
        }
        // The pushKey's format is checked once, by the `ios` descriptor.
        do {
            _ = try ChannelRegistry(APNsChannel.factory).validate(
                APNsTestSupport.device("x", token: "ef02", pushKey: Array(repeating: 1, count: 16)))
            Issue.record("a 16-byte pushKey must be refused")
        } catch {
            #expect(error.field == "pushKey")
        }
        let n = HeraldNotification(
            type: "ready", title: "HAPI", body: "Ready for input", data: ["sessionId": "s1"])
        let results = await s.channel.deliver(
            DeliveryRequest(notification: n, targets: [APNsTestSupport.target(device)]))
        #expect(results.first?.outcome == .delivered)
        let r = try #require(s.production.first)
        let body = try JSONValue.parse(r.body)
        let fixture = try JSONValue.parse(
            Array(
                try Data(
                    contentsOf: APNsTestSupport.vectorsDirectory.appendingPathComponent("hapi-envelope-v1.json"))))
        let e = try #require(body["hapi"]?["e"]?.stringValue)
        let expected = try JSONValue.parse(
            "{\"aps\":{\"mutable-content\":1,\"alert\":{\"title\":\"HAPI\",\"body\":\"New activity\"},\"sound\":\"default\"},"
                + "\"hapi\":{\"v\":1,\"e\":\"\(e)\"}}")
        #expect(body == expected)
        let plaintext = try HapiPayload.open(envelope: e, key: key)
        #expect(String(decoding: plaintext, as: UTF8.self) == fixture["plaintext"]?.stringValue)
        // FixedRandom's first 12 bytes are the fixture's nonce, so the envelope is the vector's.
        #expect(e == fixture["envelope_b64"]?.stringValue)
        #expect(!s.sink.text.contains(Base64.encode(key)))
    }

    @Test func invalidPayloadsAreNotSent() async throws {
        let s = try setUp()
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [.json(200, "")])
        let t = APNsTestSupport.target(APNsTestSupport.device("iphone", token: "fa01"))
        let big = HeraldNotification(title: "t", body: String(repeating: "x", count: 5000))
        let r1 = await s.channel.deliver(DeliveryRequest(notification: big, targets: [t]))
        #expect(r1.first?.outcome == .failed)
        #expect(r1.first?.reason?.contains("4096") == true)
        let badLA = HeraldNotification(title: "t", liveActivity: ["event": "pause", "contentState": [:]])
        let r2 = await s.channel.deliver(DeliveryRequest(notification: badLA, targets: [t]))
        #expect(r2.first?.outcome == .failed)
        #expect(r2.first?.reason?.contains("event") == true)
        #expect(s.http.requests.isEmpty)

        // A valid Live Activity goes to the activity token with the liveactivity topic.
        let la = HeraldNotification(
            title: "t", liveActivity: ["event": "update", "contentState": ["a": 1], "pushToken": "fb02"])
        let r3 = await s.channel.deliver(DeliveryRequest(notification: la, targets: [t]))
        #expect(r3.first?.outcome == .delivered)
        let sent = try #require(s.production.first)
        #expect(sent.path == "/3/device/fb02")
        #expect(sent.header("apns-push-type") == "liveactivity")
        #expect(sent.header("apns-topic") == "com.example.app.push-type.liveactivity")
        #expect(sent.header("apns-priority") == "5")
    }

    /// Apple documents `apns-id` as the canonical lower-case UUID and answers 400 `BadMessageId` to
    /// anything else (protocols/apns.md, the `apns-id` row): check the header actually sent, for
    /// regular alerts (whatever form the delivery id has) and for a Live Activity.
    @Test func apnsIDHeaderIsTheDocumentedLowerCaseUUID() async throws {
        let s = try setUp()
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [.json(200, "", headers: ["apns-id": "A"])])
        let ids = [
            "123e4567-e89b-12d3-a456-4266554400a0", "0D4C1C0E-3B7A-4F1E-9A55-2B9E64D1A7C3", "delivery-7",
            UUID().uuidString,
        ]
        let targets = ids.enumerated().map { i, id in
            APNsTestSupport.target(APNsTestSupport.device("d\(i)", token: "abcd0\(i)"), deliveryId: id)
        }
        let alert = HeraldNotification(title: "t", body: "b")
        #expect(
            await s.channel.deliver(DeliveryRequest(notification: alert, targets: targets)).allSatisfy {
                $0.outcome == .delivered
            })
        let activity = HeraldNotification(
            liveActivity: [
                "ref": "order-1024", "event": "update",
                "contentState": [
                    "title": "Order #1024", "summary": "Picked up", "status": "running",
                    "revision": 1_793_000_000_123,
                ],
                "alert": ["body": "Picked up"],
            ])
        #expect(
            await s.channel.deliver(DeliveryRequest(notification: activity, targets: targets)).allSatisfy {
                $0.outcome == .delivered
            })
        let requests = s.production
        try #require(requests.count == 2 * ids.count)
        #expect(requests.filter { $0.header("apns-push-type") == "liveactivity" }.count == ids.count)
        for r in requests {
            let id = try #require(r.header("apns-id"))
            #expect(APNsTestSupport.matches(id, APNsTestSupport.apnsIDPattern), "apns-id \(id)")
        }
        // A UUID delivery id is sent as itself, lower-cased; the same id on every send.
        let byToken = Dictionary(grouping: requests, by: { String($0.path.dropFirst("/3/device/".count)) })
        #expect(byToken["abcd00"]?.map { $0.header("apns-id") } == [ids[0], ids[0]])
        #expect(byToken["abcd01"]?.map { $0.header("apns-id") } == [ids[1].lowercased(), ids[1].lowercased()])
        #expect(byToken["abcd03"]?.map { $0.header("apns-id") } == [ids[3].lowercased(), ids[3].lowercased()])
    }

    /// A fan-out of 150 devices gets 150 answers, each request with its own `apns-id`. (That the
    /// requests share a few HTTP/2 connections is the transport's part: `APNsChannelOverHTTP2Tests`.)
    @Test func manyDevicesEachGetARequest() async throws {
        let s = try setUp()
        defer { s.stop() }
        s.http.route(Self.production + "/3/device/", [ScriptedResponse(status: 200, headers: ["apns-id": "M"])])
        let targets = (0..<150).map { i in
            APNsTestSupport.target(APNsTestSupport.device("d\(i)", token: String(format: "%04x", i)))
        }
        let results = await s.channel.deliver(
            DeliveryRequest(notification: HeraldNotification(title: "fan-out"), targets: targets))
        #expect(results.count == 150)
        #expect(results.allSatisfy { $0.outcome == .delivered })
        let requests = s.production
        #expect(requests.count == 150)
        #expect(Set(requests.map(\.path)).count == 150)
        #expect(Set(requests.map { $0.header("apns-id") ?? "" }).count == 150)
    }
}

/// The one APNs test kept end to end over a real loopback HTTP/2 TLS server: a fan-out is
/// multiplexed over a few connections of HeraldHTTP's client (transport behaviour the scripted
/// transport cannot show).
@Suite("APNs channel over HTTP/2", .stopsFakeHTTPServers)
struct APNsChannelOverHTTP2Tests {
    @Test func manyDevicesShareOneConnection() async throws {
        try await withFakeHTTPServer { server in
            let dir = try APNsTestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            let (_, p8) = try APNsTestSupport.writeP8(in: dir)
            let http = try HTTPClient(configuration: .init(caFile: server.caFile))
            let config = try APNsTestSupport.config(
                """
                type: apns
                key-p8: \(p8)
                key-id: TESTKEY123
                team-id: TEAM123456
                topic: com.example.app
                endpoints: { production: "\(server.baseURL)" }
                """)
            let channel = try APNsChannel.factory.make(config, APNsTestSupport.context(http: http))
            try config.finish()
            try await server.route("/3/device/", [FakeHTTPResponse(status: 200, headers: ["apns-id": "M"])])
            let targets = (0..<150).map { i in
                APNsTestSupport.target(APNsTestSupport.device("d\(i)", token: String(format: "%04x", i)))
            }
            let results = await channel.deliver(
                DeliveryRequest(notification: HeraldNotification(title: "fan-out"), targets: targets))
            await http.shutdown()
            #expect(results.count == 150)
            #expect(results.allSatisfy { $0.outcome == .delivered })
            let requests = try await server.requests()
            #expect(requests.count == 150)
            #expect(requests.allSatisfy { $0.httpVersion == "2" })
            #expect(Set(requests.map(\.connectionID)).count <= 4)
            #expect(Set(requests.map { $0.header("apns-id") ?? "" }).count == 150)
        }
    }
}

@Suite("APNs config")
struct APNsConfigTests {
    func make(_ yaml: String) throws -> any Channel {
        let http = ScriptedTransport()
        let config = try APNsTestSupport.config(yaml)
        let c = try APNsChannel.factory.make(config, APNsTestSupport.context(http: http))
        try config.finish()
        return c
    }

    @Test func badP8IsAConfigErrorNamingTheFile() throws {
        let dir = try APNsTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("AuthKey_MISSING.p8").path
        let base = "type: apns\nkey-id: K\nteam-id: T\ntopic: com.example.app\n"
        do {
            _ = try make(base + "key-p8: \(missing)")
            Issue.record("missing file accepted")
        } catch let error as ConfigError {
            #expect(error.description.contains(missing))
            #expect(error.description.hasPrefix("herald.yaml:"))
        }
        let garbage = dir.appendingPathComponent("AuthKey_BAD.p8").path
        try Data("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".utf8).write(
            to: URL(fileURLWithPath: garbage))
        do {
            _ = try make(base + "key-p8: \(garbage)")
            Issue.record("garbage key accepted")
        } catch let error as ConfigError {
            #expect(error.description.contains(garbage))
        }
        let (_, good) = try APNsTestSupport.writeP8(in: dir)
        #expect(throws: ConfigError.self) { try make(base + "key-p8: \(good)\nencryption: rot13") }
        #expect(throws: ConfigError.self) { try make(base + "key-p8: \(good)\ncontent: partial") }
        #expect(throws: ConfigError.self) { try make(base + "key-p8: \(good)\nenvironment: staging") }
        #expect(throws: ConfigError.self) { try make(base + "key-p8: \(good)\nendpoints: { beta: https://x }") }
        #expect(throws: ConfigError.self) { try make(base + "key-p8: \(good)\nunknown-key: 1") }
        #expect(throws: ConfigError.self) { try make("type: apns\nkey-p8: \(good)\nkey-id: K\ntopic: t") }
        let c = try #require(try make(base + "key-p8: \(good)") as? APNsChannel)
        #expect(c.configuration.environment == .production)
        #expect(c.configuration.encryption == .none)
        #expect(c.configuration.content == .full)
        #expect(c.configuration.endpoints == APNsConfiguration.defaultEndpoints)
    }

    @Test func registeredInHeraldChannels() {
        #expect(HeraldChannels.factories.contains { $0.type == "apns" && $0.defaultPlatforms == ["ios"] })
    }
}
