import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTP
import HeraldHTTPTesting
import RouterTesting
import Testing

@testable import WebPushChannel

/// A browser-side subscription: the key pair and auth secret a real user agent would hold.
struct TestSubscriber {
    let key: P256PrivateKey
    let auth: [UInt8]
    let endpoint: String

    init(endpoint: String) throws {
        key = try P256PrivateKey()
        auth = SecureRandom.bytes(16)
        self.endpoint = endpoint
    }

    func device(_ id: String) -> Device {
        Device(
            deviceId: id, platform: "web",
            fields: [
                "subscription": [
                    "endpoint": .string(endpoint),
                    "keys": [
                        "p256dh": .string(Base64.urlEncode(key.publicKey.x963Representation)),
                        "auth": .string(Base64.urlEncode(auth)),
                    ],
                ]
            ])
    }
}

/// A Web Push channel built by its factory on a scripted push service at ``origin``.
struct WebPushHarness {
    /// The push service's origin in the scripted tests (a public-looking name, as device endpoints are).
    static let origin = "https://push.example.net"
    let http: ScriptedTransport
    let channel: WebPushChannel
    let sink: RecordingLogSink
    let state: InMemoryChannelState
    let clock: ManualClock

    static func start(
        state: InMemoryChannelState = InMemoryChannelState(), padding: String = "bucket",
        allowHosts: [String] = ["127.0.0.1"]
    ) throws -> WebPushHarness {
        let http = ScriptedTransport()
        let sink = RecordingLogSink()
        let clock = ManualClock()
        let channel = try makeChannel(
            http: http, state: state, padding: padding, allowHosts: allowHosts, sink: sink, clock: clock)
        return WebPushHarness(http: http, channel: channel, sink: sink, state: state, clock: clock)
    }

    /// The channel from its factory on `http`.
    static func makeChannel(
        http: any HTTPTransport, state: InMemoryChannelState = InMemoryChannelState(), padding: String = "bucket",
        allowHosts: [String], sink: RecordingLogSink = RecordingLogSink(), clock: ManualClock = ManualClock()
    ) throws -> WebPushChannel {
        let context = ChannelContext(
            name: "webpush", http: http, clock: clock, random: SystemRandom(),
            logger: ChannelLogger(source: "webpush", sink: sink, clock: clock), state: state)
        let config = try webPushConfig(
            #"{type: webpush, vapid: {subject: "mailto:ops@example.com"}, padding: \#(padding)}"#,
            allowHosts: allowHosts)
        let channel = try #require(
            try WebPushChannel.factory.make(config, context) as? WebPushChannel, "factory did not make a WebPushChannel"
        )
        try config.finish()
        return channel
    }

    func register(_ subscriber: TestSubscriber, _ id: String) async throws -> Device {
        try await channel.validateRegistration(subscriber.device(id))
    }
}

/// Runs `executable` with `arguments`, writes `input` (canonical JSON) to its stdin and parses its stdout.
func runJSONScript(_ executable: String, _ arguments: [String], _ input: JSONValue) throws -> JSONValue {
    let r = try Subprocess.run(executable: executable, arguments: arguments, stdin: input.canonicalBytes)
    do {
        return try JSONValue.parse(r.stdoutBytes)
    } catch {
        throw ValidationError(field: executable, "exited \(r.code) without JSON on stdout: \(r.stderr)")
    }
}

/// `Tests/ChannelsTests`.
let channelsTestsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

/// Runs `Scripts/webpush_check.py` (http_ece + PyJWT) on one recorded request.
func pythonCheck(_ input: JSONValue) throws -> JSONValue {
    let script = channelsTestsDirectory.appendingPathComponent("Scripts/webpush_check.py")
    return try runJSONScript("python3", [script.path], input)
}

@Suite struct WebPushChannelTests {
    @Test func registrationValidation() async throws {
        let h = try WebPushHarness.start()
        let good = try TestSubscriber(endpoint: "https://push.example.net/p/abc")
        let normalised = try await h.channel.validateRegistration(good.device("d"))
        #expect(normalised.string("vapidKeyId") == (try VAPIDKeyRing.loadOrCreate(from: h.state, now: 0)).newest.id)
        // Standard base64 keys are accepted and stored as base64url.
        var std = good.device("d")
        std.fields["subscription"] = [
            "endpoint": .string(good.endpoint),
            "keys": [
                "p256dh": .string(Base64.encode(good.key.publicKey.x963Representation)),
                "auth": .string(Base64.encode(good.auth)),
            ],
        ]
        let fixed = try await h.channel.validateRegistration(std)
        #expect(fixed.fields["subscription"] == normalised.fields["subscription"])

        var offCurve = good.key.publicKey.x963Representation
        offCurve[64] ^= 1
        let cases: [(String, JSONValue, String)] = [
            ("bad point", sub(good.endpoint, Base64.urlEncode(offCurve), good.auth), "subscription.keys.p256dh"),
            ("short auth", sub(good.endpoint, good.p256dh, Array(good.auth.prefix(15))), "subscription.keys.auth"),
            ("http", sub("http://push.example.net/p", good.p256dh, good.auth), "subscription.endpoint"),
            ("private", sub("https://10.1.2.3/p", good.p256dh, good.auth), "subscription.endpoint"),
            ("loopback", sub("https://localhost/p", good.p256dh, good.auth), "subscription.endpoint"),
            ("no keys", ["endpoint": .string(good.endpoint)], "subscription.keys"),
        ]
        for (name, subscription, field) in cases {
            var d = good.device("x")
            d.fields["subscription"] = subscription
            do {
                _ = try await h.channel.validateRegistration(d)
                Issue.record("\(name) accepted")
            } catch {
                #expect(error.field == field, "\(name)")
            }
        }
        var unknownKey = good.device("x")
        unknownKey.fields["vapidKeyId"] = "nope"
        await #expect(throws: ValidationError.self) { _ = try await h.channel.validateRegistration(unknownKey) }
        // The allow-listed loopback host is accepted.
        let local = try TestSubscriber(endpoint: "https://127.0.0.1:8443/push/x")
        _ = try await h.register(local, "l")
        // Contract-level validation allows the vapidKeyId field on web devices.
        _ = try Device(json: normalised.json)
    }

    func sub(_ endpoint: String, _ p256dh: String, _ auth: [UInt8]) -> JSONValue {
        ["endpoint": .string(endpoint), "keys": ["p256dh": .string(p256dh), "auth": .string(Base64.urlEncode(auth))]]
    }

    @Test func vapidKeyPersistsAcrossInstances() async throws {
        let state = InMemoryChannelState()
        let a = try WebPushHarness.start(state: state)
        let b = try WebPushHarness.start(state: state)
        let key = try a.channel.applicationServerKey()
        #expect(try b.channel.applicationServerKey() == key)
        #expect(try Base64.urlDecode(key).count == 65)
        let rotated = try b.channel.rotateApplicationServerKey()
        #expect(rotated != key)
        #expect(try a.channel.applicationServerKey() == rotated)
        #expect(try a.channel.vapidKeys().map(\.applicationServerKey) == [key, rotated])
    }

    @Test func deliversAndPythonDecrypts() async throws {
        let h = try WebPushHarness.start()
        h.http.route("/push/", [ScriptedResponse(status: 201, headers: ["location": "/m/1"])])
        let subscriber = try TestSubscriber(endpoint: WebPushHarness.origin + "/push/abc")
        let device = try await h.register(subscriber, "laptop")
        let n = HeraldNotification(
            id: "n-1", type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            severity: .warning, url: "/sessions/5f0c", tag: "permission-5f0c", data: ["sessionId": "5f0c"],
            actions: [NotificationAction(id: "approve", title: "Allow")], ttl: 0, web: ["icon": "/i.png"])
        let results = await h.channel.deliver(
            DeliveryRequest(notification: n, targets: [DeliveryTarget(device: device, deliveryId: "x1")]))
        #expect(results.count == 1)
        #expect(results.first?.outcome == .delivered)
        #expect(results.first?.status == 201)
        #expect(results.first?.providerMessageId == "/m/1")
        let requests = h.http.requests
        let r = try #require(requests.first)
        #expect(r.method == "POST" && r.path == "/push/abc")
        // A device-supplied endpoint: the transport must refuse non-public addresses when connecting.
        #expect(r.addressPolicy == .publicOnly)
        #expect(r.header("ttl") == "0")
        #expect(r.header("urgency") == "high")
        #expect(r.header("topic") == WebPushHeaders.topic(for: "permission-5f0c"))
        #expect(r.header("content-encoding") == "aes128gcm")
        #expect(r.header("content-type") == "application/octet-stream")
        #expect(r.header("crypto-key") == nil && r.header("encryption") == nil)
        let authorization = try #require(r.header("authorization"))
        #expect(authorization.hasPrefix("vapid t="))

        // Our own decryptor and JWS verifier.
        let plain = try ECEDecryptor.decryptWebPush(
            r.body, subscriberPrivateKey: subscriber.key, authSecret: subscriber.auth)
        let payload = try JSONValue.parse(plain)
        #expect(plain.count > 256 && plain.count < 511)
        #expect(r.body.count == 86 + 512 + 16)  // padded to the second 256-byte bucket
        #expect(payload["id"] == "n-1" && payload["deviceId"] == "laptop" && payload["icon"] == "/i.png")

        // http_ece and PyJWT.
        let check = try pythonCheck([
            "body": .string(Base64.urlEncode(r.body)),
            "privateKey": .string(Base64.urlEncode(subscriber.key.rawRepresentation)),
            "auth": .string(Base64.urlEncode(subscriber.auth)), "authorization": .string(authorization),
            "audience": .string(WebPushHarness.origin),
        ])
        #expect(check["error"] == nil, "\(check)")
        #expect(try JSONValue.parse(check["plaintext"]?.stringValue ?? "") == payload)
        #expect(check["header"] == ["typ": "JWT", "alg": "ES256"])
        #expect(check["claims"]?["aud"]?.stringValue == WebPushHarness.origin)
        #expect(check["claims"]?["sub"]?.stringValue == "mailto:ops@example.com")
        let exp = try #require(check["claims"]?["exp"]?.intValue)
        let now = Int(h.clock.now().secondsSince1970)
        #expect(exp == now + 43_200)
        #expect(check["k"]?.stringValue == (try h.channel.applicationServerKey()))
    }

    /// Runs `Scripts/sw_harness.js` with Node on `Examples/web/sw.js`.
    func serviceWorker(_ input: JSONValue) throws -> JSONValue {
        guard let node = Subprocess.find("node") ?? Subprocess.find("nodejs") else {
            throw ValidationError(field: "node", "not on PATH (scripts/install-deps.sh installs nodejs)")
        }
        let root = channelsTestsDirectory.deletingLastPathComponent().deletingLastPathComponent()
        let harness = channelsTestsDirectory.appendingPathComponent("Scripts/sw_harness.js")
        return try runJSONScript(node, [harness.path, root.appendingPathComponent("Examples/web/sw.js").path], input)
    }

    @Test("The example service worker shows Herald's decrypted payload, reports each lifecycle event and opens the url")
    func exampleServiceWorker() async throws {
        let h = try WebPushHarness.start()
        h.http.route("/push/", [ScriptedResponse(status: 201, headers: ["location": "/m/1"])])
        let subscriber = try TestSubscriber(endpoint: WebPushHarness.origin + "/push/sw")
        let device = try await h.register(subscriber, "laptop")
        let n = HeraldNotification(
            id: "n-7", type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            url: "/sessions/5f0c", tag: "permission-5f0c", data: ["sessionId": "5f0c"],
            actions: [
                NotificationAction(id: "approve", title: "Allow"),
                NotificationAction(id: "deny", title: "Deny", destructive: true),
            ], badge: 4, web: ["icon": "/i.png"])
        let results = await h.channel.deliver(
            DeliveryRequest(notification: n, targets: [DeliveryTarget(device: device, deliveryId: "x7")]))
        #expect(results.first?.outcome == .delivered)
        let r = try #require(h.http.requests.first)
        // The worker gets what the browser would: the body decrypted by an independent implementation.
        let check = try pythonCheck([
            "body": .string(Base64.urlEncode(r.body)),
            "privateKey": .string(Base64.urlEncode(subscriber.key.rawRepresentation)),
            "auth": .string(Base64.urlEncode(subscriber.auth)),
            "authorization": .string(r.header("authorization") ?? ""), "audience": .string(WebPushHarness.origin),
        ])
        let plaintext = try #require(check["plaintext"]?.stringValue, "\(check)")
        let scope = "https://hub.example/app/"
        let calls = try serviceWorker(["payload": .string(plaintext), "action": "approve", "scope": .string(scope)])
        #expect(calls["error"] == nil, "\(calls)")
        let list = calls.arrayValue ?? []
        // Herald's events route (docs/http-api.md): the id in the path, and only kind, action, deviceId
        // (and data) in the body; anything else is 422 (issue 36: `actionId` was).
        func report(_ kind: String, _ action: String? = nil) -> JSONValue {
            var body: [String: JSONValue] = ["kind": .string(kind), "deviceId": "laptop"]
            if let action { body["action"] = .string(action) }
            return [
                "call": "fetch", "url": .string(scope + "v1/notifications/n-7/events"), "method": "POST",
                "body": .object(body),
            ]
        }
        let shown = try #require(list.first)
        #expect(shown["call"] == "showNotification" && shown["title"] == "Permission Request")
        #expect(shown["options"]?["body"] == "Claude Bash: rm -rf build")
        #expect(shown["options"]?["tag"] == "permission-5f0c")
        #expect(shown["options"]?["icon"] == "/i.png")
        #expect(
            shown["options"]?["actions"]
                == [["action": "approve", "title": "Allow"], ["action": "deny", "title": "Deny"]])
        #expect(shown["options"]?["data"] == (try JSONValue.parse(plaintext)))
        #expect(
            Array(list.dropFirst())
                == [
                    report("received"), ["call": "setAppBadge", "n": 4],
                    ["call": "close"], report("action", "approve"),
                    ["call": "close"], report("tapped"),
                    ["call": "openWindow", "url": "https://hub.example/sessions/5f0c"],
                    report("dismissed"),
                ])
    }

    @Test func statusPolicy() async throws {
        let h = try WebPushHarness.start()
        let statuses: [(Int, [String: String], String, DeliveryOutcome)] = [
            (201, [:], "", .delivered), (202, [:], "", .delivered),
            (404, [:], #"{"code":404,"errno":102,"error":"Not Found","message":"invalid token"}"#, .dead),
            (410, [:], #"{"code":410,"errno":103,"error":"Gone","message":"expired"}"#, .dead),
            (429, ["retry-after": "120"], "", .retry), (500, [:], "", .retry), (503, [:], "", .retry),
            (413, [:], #"{"errno":104}"#, .failed), (400, [:], #"{"errno":111}"#, .failed),
            (401, [:], #"{"errno":109}"#, .failed), (403, [:], #"{"reason":"BadJwtToken"}"#, .failed),
        ]
        var devices: [Device] = []
        var subscribers: [String: TestSubscriber] = [:]
        for (status, headers, body, _) in statuses {
            h.http.route("/s\(status)/", [ScriptedResponse(status: status, headers: headers, body: Array(body.utf8))])
            let s = try TestSubscriber(endpoint: WebPushHarness.origin + "/s\(status)/secret-path-\(status)")
            subscribers["d\(status)"] = s
            devices.append(try await h.register(s, "d\(status)"))
        }
        let n = HeraldNotification(title: "hi", body: "there")
        let results = await h.channel.deliver(
            DeliveryRequest(
                notification: n, targets: devices.map { DeliveryTarget(device: $0, deliveryId: "id-\($0.deviceId)") }))
        #expect(results.count == statuses.count)
        for (status, _, _, outcome) in statuses {
            let r = try #require(results.first { $0.deviceId == "d\(status)" })
            #expect(r.outcome == outcome, "\(status)")
            #expect(r.status == status)
        }
        #expect(results.first { $0.deviceId == "d429" }?.retryAfter == .seconds(120))
        #expect(results.first { $0.deviceId == "d410" }?.reason?.contains("errno 103") == true)
        #expect(results.first { $0.deviceId == "d403" }?.reason?.contains("BadJwtToken") == true)
        // 400/401/403 are logged at error level, without secrets.
        let errors = h.sink.all.filter { $0.level == .error }
        #expect(errors.count == 3)
        let text = h.sink.text
        let requests = h.http.requests
        #expect(requests.count == statuses.count)
        for r in requests {
            let auth = r.header("authorization") ?? "missing"
            let token = String(auth.dropFirst("vapid t=".count).prefix { $0 != "," })
            #expect(!text.contains(token))
            #expect(!text.contains(r.path))
        }
        for s in subscribers.values {
            #expect(!text.contains(Base64.urlEncode(s.auth)))
            #expect(!text.contains(Base64.urlEncode(s.key.publicKey.x963Representation)))
            #expect(!text.contains("secret-path"))
        }
        // One token per origin and key: every request carried the same cached JWT.
        #expect(Set(requests.compactMap { $0.header("authorization") }).count == 1)
    }

    @Test func transportErrorRetriesAndTooLargeFails() async throws {
        let h = try WebPushHarness.start()
        let closed = try TestSubscriber(endpoint: "https://127.0.0.1:1/push/x")
        h.http.route("https://127.0.0.1:1/", [.error(.connectFailed, "connection refused")])
        let device = try await h.register(closed, "c")
        let r1 = await h.channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(title: "t"), targets: [DeliveryTarget(device: device, deliveryId: "1")]
            ))
        #expect(r1.first?.outcome == .retry)
        let big = HeraldNotification(title: "t", body: String(repeating: "x", count: 4000))
        let r2 = await h.channel.deliver(
            DeliveryRequest(notification: big, targets: [DeliveryTarget(device: device, deliveryId: "2")]))
        #expect(r2.first?.outcome == .failed)
        #expect(r2.first?.reason?.contains("exceeds") == true)
        #expect(h.http.requests.count == 1, "only the first attempt reached the transport")
    }

    /// The channel's part of the address policy: a device-supplied endpoint goes out as
    /// `AddressPolicy.publicOnly`, one whose host `allow-hosts` names as `.any` (the transport's
    /// connect-time check is `WebPushAddressPolicyOverHTTPTests`).
    @Test func endpointRequestsCarryTheAddressPolicy() async throws {
        let h = try WebPushHarness.start(allowHosts: ["127.1"])
        h.http.route("/push/", [ScriptedResponse(status: 201)])
        let listed = try TestSubscriber(endpoint: "https://127.1:8443/push/listed")
        let other = try TestSubscriber(endpoint: WebPushHarness.origin + "/push/other")
        let r = await h.channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(title: "t"),
                targets: [
                    DeliveryTarget(device: listed.device("l"), deliveryId: "1"),
                    DeliveryTarget(device: other.device("o"), deliveryId: "2"),
                ]))
        #expect(r.map(\.outcome) == [.delivered, .delivered])
        let policies = Dictionary(uniqueKeysWithValues: h.http.requests.map { ($0.path, $0.addressPolicy) })
        #expect(policies == ["/push/listed": .any, "/push/other": .publicOnly])
    }

    @Test func endpointPolicyCheckedBeforeSending() async throws {
        let h = try WebPushHarness.start()
        // A device stored earlier (or under another allow-list) pointing at a private host.
        let s = try TestSubscriber(endpoint: "https://192.168.1.5/push/x")
        let r = await h.channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(title: "t"),
                targets: [DeliveryTarget(device: s.device("p"), deliveryId: "1")]))
        #expect(r.first?.outcome == .failed)
        #expect(r.first?.reason?.contains("subscription.endpoint") == true)
        #expect(h.http.requests.isEmpty)
    }

    @Test func rotationKeepsOldSubscriptionsOnTheirKey() async throws {
        let h = try WebPushHarness.start()
        h.http.route("/push/", [ScriptedResponse(status: 201)])
        let oldKey = try h.channel.applicationServerKey()
        let before = try await h.register(try TestSubscriber(endpoint: WebPushHarness.origin + "/push/old"), "old")
        let newKey = try h.channel.rotateApplicationServerKey()
        let after = try await h.register(try TestSubscriber(endpoint: WebPushHarness.origin + "/push/new"), "new")
        #expect(before.string("vapidKeyId") != after.string("vapidKeyId"))
        let results = await h.channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(title: "t"),
                targets: [
                    DeliveryTarget(device: before, deliveryId: "1"), DeliveryTarget(device: after, deliveryId: "2"),
                ]))
        #expect(results.allSatisfy { $0.outcome == .delivered })
        let requests = h.http.requests
        func k(_ path: String) -> String? {
            requests.first { $0.path == path }?.header("authorization")?.split(separator: "k=").last.map(String.init)
        }
        #expect(k("/push/old") == oldKey)
        #expect(k("/push/new") == newKey)
    }

    @Test func corruptKeysFailLoudly() async throws {
        let state = InMemoryChannelState()
        try state.setValue(Array("garbage".utf8), forKey: VAPIDKeyRing.stateKey)
        let h = try WebPushHarness.start(state: state)
        let s = try TestSubscriber(endpoint: WebPushHarness.origin + "/push/x")
        let r = await h.channel.deliver(
            DeliveryRequest(
                notification: HeraldNotification(title: "t"),
                targets: [DeliveryTarget(device: s.device("a"), deliveryId: "1")]))
        #expect(r.first?.outcome == .failed)
        #expect(r.first?.reason?.contains("corrupt") == true)
        #expect(throws: (any Error).self) { _ = try h.channel.applicationServerKey() }
        await #expect(throws: ValidationError.self) { _ = try await h.channel.validateRegistration(s.device("a")) }
        #expect(try state.value(forKey: VAPIDKeyRing.stateKey) == Array("garbage".utf8))
        #expect(h.sink.all.contains { $0.level == .error && $0.message.contains("VAPID") })
        #expect(h.http.requests.isEmpty)
    }
}

extension TestSubscriber {
    var p256dh: String { Base64.urlEncode(key.publicKey.x963Representation) }
}

/// Kept end to end over a real loopback HTTP/2 TLS server and HeraldHTTP's client: the address policy
/// is enforced on the address a host resolves to when the connection is made, which only a real
/// transport shows (the channel's part, the policy on each request, is
/// `WebPushChannelTests.endpointRequestsCarryTheAddressPolicy`).
@Suite(.stopsFakeHTTPServers) struct WebPushAddressPolicyOverHTTPTests {
    /// Issue 15 item 9: endpoints whose text looks public but that reach the loopback test server are
    /// refused when the connection is made; nothing reaches the server, the result says why, and the
    /// delivery is not retried.
    @Test(arguments: [
        "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "[0::1]", "[0:0:0:0:0:0:0:1]",
        "[0:0:0:0:0:ffff:7f00:1]", "[::ffff:7f00:1]", "2852039166", "0xa9fea9fe", "167772161", "012.0.0.1",
    ])
    func endpointResolvingToPrivateAddressIsRefusedAtConnect(_ host: String) async throws {
        try await withFakeHTTPServer { server in
            let http = try HTTPClient(configuration: .init(caFile: server.caFile))
            let channel = try WebPushHarness.makeChannel(http: http, allowHosts: [])
            try await server.route("/push/", [FakeHTTPResponse(status: 201)])
            let s = try TestSubscriber(endpoint: "https://\(host):\(server.port)/push/x")
            let r = await channel.deliver(
                DeliveryRequest(
                    notification: HeraldNotification(title: "t"),
                    targets: [DeliveryTarget(device: s.device("p"), deliveryId: "1")]))
            await http.shutdown()
            let result = try #require(r.first)
            #expect(result.outcome == .failed, "\(host): \(result)")
            let reason = result.reason ?? ""
            #expect(
                reason.hasPrefix("blocked-address: refused to connect to ") || reason.contains("loopback or private"),
                "\(host): \(reason)")
            #expect(try await server.requests().isEmpty, "\(host) reached the server")
        }
    }

    /// With `allow-hosts` naming the host (as written in the endpoint), it is reached.
    @Test(arguments: ["127.1", "2130706433", "localhost"]) func allowListedHostIsReached(_ host: String) async throws {
        try await withFakeHTTPServer { server in
            let http = try HTTPClient(configuration: .init(caFile: server.caFile))
            let channel = try WebPushHarness.makeChannel(http: http, allowHosts: [host])
            try await server.route("/push/", [FakeHTTPResponse(status: 201)])
            let s = try TestSubscriber(endpoint: "https://\(host):\(server.port)/push/x")
            let device = try await channel.validateRegistration(s.device("p"))
            let r = await channel.deliver(
                DeliveryRequest(
                    notification: HeraldNotification(title: "t"),
                    targets: [DeliveryTarget(device: device, deliveryId: "1")]))
            await http.shutdown()
            #expect(r.first?.outcome == .delivered, "\(host): \(String(describing: r.first))")
            #expect(try await server.requests().count == 1)
        }
    }
}
