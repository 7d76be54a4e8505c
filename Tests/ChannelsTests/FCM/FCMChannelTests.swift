import ChannelAPI
import ChannelSupport
import FCMChannel
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

/// Realistic FCM HTTP v1 error bodies.
enum FCMBodies {
    static func fcmError(_ code: Int, _ status: String, _ message: String, errorCode: String?, fields: [String] = [])
        -> String
    {
        var details: [String] = []
        if let errorCode {
            details.append(
                #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#)
        }
        if !fields.isEmpty {
            let v = fields.map { #"{"field":"\#($0)","description":"Invalid value"}"# }.joined(separator: ",")
            details.append(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[\#(v)]}"#)
        }
        return
            #"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)","details":[\#(details.joined(separator: ","))]}}"#
    }
}

@Suite("FCM channel against a scripted FCM")
struct FCMChannelTests {
    @Test("Sends one request per device with the bearer token and the assertion pyjwt accepts")
    func sendsAndAuthenticates() async throws {
        let h = try FCMHarness.start()
        let devices = [FCMFixture.phone("a"), FCMFixture.phone("b", platform: "wear")]
        let results = await h.deliver(.sample(), devices)
        #expect(results.count == 2)
        #expect(results.allSatisfy { $0.outcome == .delivered && $0.status == 200 })
        #expect(results.allSatisfy { $0.providerMessageId == "projects/demo-project/messages/0:1" })

        let tokenRequests = h.tokenRequests()
        #expect(tokenRequests.count == 1)
        let form = try #require(tokenRequests.first).formFields
        #expect(form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer")
        #expect(tokenRequests.first?.header("content-type") == "application/x-www-form-urlencoded")
        let assertion = try #require(form["assertion"])
        let verified = FCMFixture.python("fcm_verify_assertion.py", [h.accountPath], stdin: assertion)
        #expect(verified.code == 0, "pyjwt: \(verified.stderr)")

        let sends = h.sends()
        #expect(sends.count == 2)
        for s in sends {
            #expect(s.header("authorization") == "Bearer \(FCMHarness.accessToken)")
            let message = try #require(s.json?["message"])
            let data = try #require(message["data"]?.objectValue)
            #expect(data.values.allSatisfy { $0.stringValue != nil }, "every data value is a string")
            #expect(data["sessionId"] == "5f0c")
            #expect(data["extra"] == "yes")
            let token = try #require(message["token"]?.stringValue)
            let id = token == devices[0].token ? "a" : "b"
            #expect(data["heraldDeliveryId"]?.stringValue == "dlv-\(id)")
            #expect(message["android"]?["direct_boot_ok"] == (id == "b" ? true : nil))
        }
    }

    @Test("A token is reused within its validity, refreshed 60 s before expiry, and shared through the state")
    func tokenCaching() async throws {
        let state = InMemoryChannelState()
        let h = try FCMHarness.start(
            tokens: [FCMFixture.token("ya29.first-token-000000000"), FCMFixture.token("ya29.second-token-00000000")],
            state: state)
        let d = [FCMFixture.phone("a")]
        _ = await h.deliver(.sample(), d)
        h.clock.advance(by: .seconds(3000))
        _ = await h.deliver(.sample(), d)
        #expect(h.tokenRequests().count == 1, "second send within validity makes no token request")

        // Another process (fresh channel, same store) reuses the stored token.
        let other = try h.sibling(state: state)
        _ = await other.deliver(
            DeliveryRequest(notification: .sample(), targets: [DeliveryTarget(device: d[0], deliveryId: "x")]))
        #expect(h.tokenRequests().count == 1)
        #expect(await other.tokens.requestsMade == 0)

        h.clock.advance(by: .seconds(540))  // 3540 s after minting = expiry - 60 s
        _ = await h.deliver(.sample(), d)
        #expect(h.tokenRequests().count == 2)
        let last = h.sends().last
        #expect(last?.header("authorization") == "Bearer ya29.second-token-00000000")
        #expect(state.keys == ["oauth-token:\(FCMFixture.email)|\(FCMHarness.baseURL)/token"])
    }

    @Test("Concurrent deliveries share one token request; 250 devices all get an answer")
    func fanOut() async throws {
        let h = try FCMHarness.start()
        let devices = (0..<250).map { FCMFixture.phone("d\($0)") }
        async let a = h.deliver(.sample(), Array(devices[..<125]))
        async let b = h.deliver(.sample(), Array(devices[125...]))
        let results = await a + b
        #expect(results.count == 250)
        #expect(Set(results.compactMap(\.deviceId)).count == 250)
        #expect(results.allSatisfy { $0.outcome == .delivered })
        #expect(h.tokenRequests().count == 1)
        #expect(h.sends().count == 250)
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var response: ScriptedResponse
        var outcome: DeliveryOutcome
        var reason: String?
        var retryAfter: Duration?
        var description: String { name }
    }

    static let matrix: [Case] = [
        Case(
            name: "UNREGISTERED → dead",
            response: .json(
                404, FCMBodies.fcmError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")),
            outcome: .dead, reason: "FCM answered 404 UNREGISTERED: Requested entity was not found."),
        Case(
            name: "INVALID_ARGUMENT naming message.token → dead",
            response: .json(
                400,
                FCMBodies.fcmError(
                    400, "INVALID_ARGUMENT", "Request contains an invalid argument.", errorCode: "INVALID_ARGUMENT",
                    fields: ["message.token"])), outcome: .dead,
            reason: "FCM answered 400 INVALID_ARGUMENT: Request contains an invalid argument. (fields: message.token)"),
        Case(
            name: "SENDER_ID_MISMATCH → dead",
            response: .json(
                403, FCMBodies.fcmError(403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")),
            outcome: .dead, reason: "FCM answered 403 SENDER_ID_MISMATCH: SenderId mismatch"),
        Case(
            name: "QUOTA_EXCEEDED without Retry-After → retry after 60 s",
            response: .json(
                429,
                FCMBodies.fcmError(
                    429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Send requests'",
                    errorCode: "QUOTA_EXCEEDED")),
            outcome: .retry, retryAfter: .seconds(60)),
        Case(
            name: "UNAVAILABLE with Retry-After → retry after it",
            response: .json(
                503,
                FCMBodies.fcmError(
                    503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE"),
                headers: ["retry-after": "17"]), outcome: .retry, retryAfter: .seconds(17)),
        Case(
            name: "INTERNAL → retry (backoff)",
            response: .json(
                500, FCMBodies.fcmError(500, "INTERNAL", "Internal error encountered.", errorCode: "INTERNAL")),
            outcome: .retry, reason: "FCM answered 500 INTERNAL: Internal error encountered."),
        Case(
            name: "THIRD_PARTY_AUTH_ERROR → failed",
            response: .json(
                401,
                FCMBodies.fcmError(
                    401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service",
                    errorCode: "THIRD_PARTY_AUTH_ERROR")
            ), outcome: .failed,
            reason: "FCM answered 401 THIRD_PARTY_AUTH_ERROR: Auth error from APNS or Web Push Service"),
        Case(
            name: "INVALID_ARGUMENT about the payload → failed",
            response: .json(
                400,
                FCMBodies.fcmError(
                    400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value' (TYPE_STRING), 12",
                    errorCode: "INVALID_ARGUMENT", fields: ["message.data[0].value"])), outcome: .failed),
        Case(
            name: "INVALID_ARGUMENT without details → failed",
            response: .json(
                400,
                #"{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}"#
            ),
            outcome: .failed, reason: "FCM answered 400 INVALID_ARGUMENT: Request contains an invalid argument."),
        Case(
            name: "plain 404 NOT_FOUND → failed, not dead",
            response: .json(
                404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#),
            outcome: .failed, reason: "FCM answered 404 NOT_FOUND: Requested entity was not found."),
        Case(
            name: "404 HTML from a proxy → failed",
            response: ScriptedResponse(status: 404, body: Array("<html>Not Found</html>".utf8)),
            outcome: .failed, reason: "FCM answered 404: <html>Not Found</html>"),
        Case(
            name: "502 HTML → retry",
            response: ScriptedResponse(status: 502, body: Array("<html>Bad Gateway</html>".utf8)),
            outcome: .retry),
        Case(
            name: "403 PERMISSION_DENIED (API disabled) → failed",
            response: .json(
                403,
                #"{"error":{"code":403,"message":"Firebase Cloud Messaging API has not been used in project 1 before or it is disabled.","status":"PERMISSION_DENIED"}}"#
            ), outcome: .failed),
        Case(
            name: "unknown error code keeps its raw text",
            response: .json(
                400, FCMBodies.fcmError(400, "FAILED_PRECONDITION", "Something new", errorCode: "BRAND_NEW_CODE")),
            outcome: .failed, reason: "FCM answered 400 BRAND_NEW_CODE: Something new"),
    ]

    @Test("The status matrix", arguments: FCMChannelTests.matrix)
    func statusMatrix(_ c: Case) async throws {
        let h = try FCMHarness.start(send: [c.response])
        let results = await h.deliver(.sample(), [FCMFixture.phone("a")])
        let r = try #require(results.first)
        #expect(results.count == 1)
        #expect(r.deviceId == "a")
        #expect(r.outcome == c.outcome, "\(r.reason ?? "")")
        #expect(r.status == c.response.status)
        if let reason = c.reason { #expect(r.reason == reason) }
        if let after = c.retryAfter { #expect(r.retryAfter == after) }
        #expect(h.sends().count == 1, "no automatic resend inside deliver")
    }

    @Test("A transport failure (nothing listening) is a retry")
    func transportRetry() async throws {
        let h = try FCMHarness.start()
        _ = await h.deliver(.sample(), [FCMFixture.phone("warm")])  // token now cached
        // Nothing listens any more.
        h.http.route("/token", method: "POST", [.error(.connectFailed, "connection refused")])
        h.http.route("/v1/projects/", method: "POST", [.error(.connectFailed, "connection refused")])
        let r = await h.deliver(.sample(), [FCMFixture.phone("a")])
        #expect(r.first?.outcome == .retry)
        #expect(r.first?.reason?.hasPrefix("FCM unreachable") == true)
        #expect(h.tokenRequests().count == 1, "the cached token was used")

        // The token endpoint unreachable: every target is a retry.
        let cold = try FCMHarness.start(tokens: [.error(.connectFailed, "connection refused")])
        let c = await cold.deliver(.sample(), [FCMFixture.phone("a"), FCMFixture.phone("b")])
        #expect(c.count == 2)
        #expect(c.allSatisfy { $0.outcome == .retry && $0.reason?.hasPrefix("token endpoint:") == true })
        #expect(cold.sends().isEmpty)
    }

    @Test("401 from send refreshes the token once and retries once")
    func unauthenticatedRefresh() async throws {
        let unauth = ScriptedResponse.json(
            401,
            #"{"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}"#
        )
        let h = try FCMHarness.start(
            tokens: [FCMFixture.token("ya29.stale-token-000000000"), FCMFixture.token("ya29.fresh-token-000000000")],
            send: [unauth, .json(200, #"{"name":"projects/demo-project/messages/2"}"#)])
        let r = await h.deliver(.sample(), [FCMFixture.phone("a")])
        #expect(r.first?.outcome == .delivered)
        #expect(r.first?.providerMessageId == "projects/demo-project/messages/2")
        #expect(h.tokenRequests().count == 2)
        let sends = h.sends()
        #expect(
            sends.map { $0.header("authorization") } == [
                "Bearer ya29.stale-token-000000000", "Bearer ya29.fresh-token-000000000",
            ])
        #expect(sends[0].body == sends[1].body, "the retry resends the same message (same heraldDeliveryId)")

        // Refused again after the refresh: failed, and only one retry.
        h.http.reset()
        h.http.route("/token", method: "POST", [FCMFixture.token("ya29.third-token-000000000")])
        h.http.route("/v1/projects/", method: "POST", [unauth])
        let again = await h.deliver(.sample(), [FCMFixture.phone("a")])
        #expect(again.first?.outcome == .failed)
        #expect(again.first?.status == 401)
        #expect(h.sends().count == 2)
    }

    @Test("Token endpoint: 400 invalid_grant fails every target, 503 and transport errors retry")
    func tokenEndpointErrors() async throws {
        let rejected = try FCMHarness.start(
            tokens: [.json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)])
        let r = await rejected.deliver(.sample(), [FCMFixture.phone("a"), FCMFixture.phone("b")])
        #expect(r.count == 2)
        #expect(r.allSatisfy { $0.outcome == .failed && $0.status == 400 })
        #expect(
            r.first?.reason
                == "OAuth credentials rejected: token endpoint answered 400: invalid_grant: Invalid JWT Signature.")
        #expect(rejected.sends().isEmpty)
        #expect(rejected.sink.all.contains { $0.level == .error })

        let busy = try FCMHarness.start(
            tokens: [ScriptedResponse(status: 503, headers: ["retry-after": "30"], body: Array("overloaded".utf8))])
        let b = await busy.deliver(.sample(), [FCMFixture.phone("a")])
        #expect(b.first?.outcome == .retry)
        #expect(b.first?.retryAfter == .seconds(30))
    }

    @Test("Encrypted devices get {v, e}, which opens with Python's AESGCM; others stay plain")
    func encryption() async throws {
        let keyBytes = Array(0..<32).map { UInt8($0 * 3 % 256) }
        let pushKey = Base64.encode(keyBytes)
        let h = try FCMHarness.start(extraYAML: "encryption: hapi-v1")
        let devices = [FCMFixture.phone("enc", pushKey: pushKey), FCMFixture.phone("plain")]
        let results = await h.deliver(.sample(), devices)
        #expect(results.allSatisfy { $0.outcome == .delivered })
        let bodies = h.sends().compactMap(\.json)
        let enc = try #require(bodies.first { $0["message"]?["token"]?.stringValue == devices[0].token })
        let plain = try #require(bodies.first { $0["message"]?["token"]?.stringValue == devices[1].token })
        let data = try #require(enc["message"]?["data"]?.objectValue)
        #expect(Set(data.keys) == ["v", "e"])
        #expect(data["v"] == "1")
        let envelope = try #require(data["e"]?.stringValue)
        let opened = FCMFixture.python("fcm_open_envelope.py", [pushKey, envelope])
        #expect(opened.code == 0, "AESGCM: \(opened.stderr)")
        #expect(opened.stdout == String(decoding: HapiPayload.plaintext(for: .sample()), as: UTF8.self))
        let parsed = try JSONValue.parse(opened.stdout)
        #expect(parsed["sessionId"] == "5f0c")
        #expect(parsed["extra"] == nil, "only hapi's keys are encrypted")
        #expect(plain["message"]?["data"]?["title"] == "Permission Request")
        let leaked = h.sends().filter { $0.bodyText.contains(pushKey) }
        #expect(leaked.isEmpty)
    }

    @Test("Oversized payloads and bad android options fail before anything is sent")
    func refusedLocally() async throws {
        let h = try FCMHarness.start()
        let big = HeraldNotification.sample(data: ["blob": String(repeating: "x", count: 5000)])
        let r = await h.deliver(big, [FCMFixture.phone("a")])
        #expect(r.first?.outcome == .failed)
        #expect(r.first?.reason?.contains("4096") == true)
        let bad = await h.deliver(.sample(android: ["priority": "urgent"]), [FCMFixture.phone("a")])
        #expect(bad.first?.outcome == .failed)
        #expect(bad.first?.reason?.contains("android.priority") == true)
        #expect(h.http.requests.isEmpty, "not even a token request")
    }

    @Test("Config errors name the file and the field, at the service-account key")
    func configErrors() async throws {
        let dir = FCMFixture.temporaryDirectory()
        var o = try #require(try FCMFixture.serviceAccountJSON(tokenURI: "https://x.example/token").objectValue)
        o.removeValue(forKey: "client_email")
        let path = try FCMFixture.writeServiceAccount(.object(o), in: dir)
        let sink = RecordingLogSink()
        let context = ChannelContext(
            name: "fcm", http: ScriptedTransport(), clock: ManualClock(), random: FixedRandom(),
            logger: ChannelLogger(source: "fcm", sink: sink), state: InMemoryChannelState())
        func message(_ yaml: String) throws -> String? {
            let config = try FCMFixture.config(yaml)
            do {
                _ = try FCMChannel.factory.make(config, context)
                return nil
            } catch {
                return error.description
            }
        }
        let missingField = try message("type: fcm\nservice-account: \(path)\n")
        #expect(missingField == "herald.yaml:2:18: service-account file \(path): missing field client_email")
        let missingFile = try #require(try message("type: fcm\nservice-account: /nope/sa.json\n"))
        #expect(missingFile.contains("/nope/sa.json"))
        #expect(try message("type: fcm\n")?.contains("service-account") == true)
        #expect(try message("type: fcm\nservice-account: \(path)\ndisplay: banner\n") != nil)
        let good = try FCMFixture.writeServiceAccount(
            FCMFixture.serviceAccountJSON(tokenURI: "https://x.example/token"))
        #expect(try message("type: fcm\nservice-account: \(good)\nencryption: rot13\n")?.contains("encryption") == true)
        #expect(try message("type: fcm\nservice-account: \(good)\ndisplay: notification\nencryption: hapi-v1\n") == nil)
        // Every documented key is read, so finish() accepts them; an unknown key is refused.
        let all = try FCMFixture.config(
            "type: fcm\nservice-account: \(good)\nendpoint: https://fcm.example\ndisplay: data\nencryption: none\n")
        _ = try FCMChannel.factory.make(all, context)
        #expect(throws: Never.self) { try all.finish() }
        let unknown = try FCMFixture.config("type: fcm\nservice-account: \(good)\ntoken-endpoint: https://x\n")
        _ = try FCMChannel.factory.make(unknown, context)
        #expect(throws: ConfigError.self) { try unknown.finish() }
        #expect(!sink.text.contains("BEGIN"))
    }

    @Test("No secret (access token, private key, device token, pushKey) reaches the logs")
    func noSecretsLogged() async throws {
        let pushKey = Base64.encode(Array(repeating: 9, count: 32))
        let h = try FCMHarness.start(
            extraYAML: "encryption: hapi-v1",
            tokens: [
                .json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#),
                FCMFixture.token(FCMHarness.accessToken),
            ],
            send: [
                .json(
                    404,
                    FCMBodies.fcmError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED"))
            ])
        let d = FCMFixture.phone("a", pushKey: pushKey)
        let n = HeraldNotification.sample(android: ["channel_id": "x", "unknown_key": 1])
        _ = await h.deliver(n, [d])
        let results = await h.deliver(n, [d])
        #expect(results.first?.outcome == .dead)
        #expect(!h.sink.all.isEmpty)
        let text = h.sink.text
        let pem = try FCMFixture.keyPEM.get()
        let keyBody = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
        for secret in [FCMHarness.accessToken, keyBody, try #require(d.token), pushKey] {
            #expect(!text.contains(secret))
            let reason = results.first?.reason ?? ""
            #expect(!reason.contains(secret))
        }
    }

    @Test("The phone/wear descriptor accepts FCM tokens and refuses bad pushKeys and tokens")
    func validation() throws {
        let registry = ChannelRegistry(FCMChannel.factory)
        let good = FCMFixture.phone("a", pushKey: Base64.encode(Array(repeating: 1, count: 32)))
        #expect(try registry.validate(good).address == good.token)
        #expect(throws: ValidationError.self) {
            try registry.validate(FCMFixture.phone("a", pushKey: "c2hvcnQ="))
        }
        #expect(throws: ValidationError.self) {
            try registry.validate(Device(deviceId: "x", platform: "phone", fields: [:]))
        }
        #expect(throws: ValidationError.self) {
            try registry.validate(Device(deviceId: "x", platform: "wear", fields: ["token": "has space"]))
        }
    }
}
