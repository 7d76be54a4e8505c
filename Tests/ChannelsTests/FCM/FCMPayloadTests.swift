import ChannelAPI
import ChannelSupport
import FCMChannel
import Foundation
import HeraldChannels
import HeraldCrypto
import RouterTesting
import Testing

@Suite("FCM pure parts")
struct FCMPayloadTests {
    // MARK: service account and assertion

    @Test("The assertion verifies with pyjwt against the key file's public key")
    func assertionVerifiesWithPyJWT() throws {
        let json = try FCMFixture.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token")
        let path = try FCMFixture.writeServiceAccount(json)
        let account = try FCMServiceAccount.load(path: path)
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let jwt = try FCMAssertion.make(for: account, now: now)
        let r = FCMFixture.python("fcm_verify_assertion.py", [path], stdin: jwt)
        #expect(r.code == 0, "pyjwt: \(r.stderr)")
        let verified = try JSONValue.parse(r.stdout)
        #expect(verified["header"]?["alg"] == "RS256")
        #expect(verified["header"]?["typ"] == "JWT")
        #expect(verified["header"]?["kid"]?.stringValue == FCMFixture.keyId)
        let claims = verified["claims"]
        #expect(claims?["iss"]?.stringValue == FCMFixture.email)
        #expect(claims?["sub"]?.stringValue == FCMFixture.email)
        #expect(claims?["aud"] == "https://oauth2.googleapis.com/token")
        #expect(claims?["scope"] == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims?["iat"]?.intValue == 1_767_225_600)
        #expect(claims?["exp"]?.intValue == 1_767_225_600 + 3600)

        // A tampered signature does not verify.
        let tampered = String(jwt.dropLast(4)) + (jwt.hasSuffix("AAAA") ? "BBBB" : "AAAA")
        #expect(FCMFixture.python("fcm_verify_assertion.py", [path], stdin: tampered).code != 0)
    }

    @Test("Without private_key_id the header has no kid")
    func noKid() throws {
        let path = try FCMFixture.writeServiceAccount(
            FCMFixture.serviceAccountJSON(tokenURI: "https://oauth2.googleapis.com/token", keyId: nil))
        let account = try FCMServiceAccount.load(path: path)
        #expect(FCMAssertion.header(for: account) == ["alg": "RS256", "typ": "JWT"])
        let jwt = try FCMAssertion.make(for: account, now: Date(timeIntervalSince1970: 1_767_225_600))
        #expect(FCMFixture.python("fcm_verify_assertion.py", [path], stdin: jwt).code == 0)
    }

    @Test("The token request is the JWT-bearer grant, form-encoded")
    func tokenRequestBody() {
        let body = String(decoding: FCMAssertion.tokenRequestBody(assertion: "aa.bb-_.cc"), as: UTF8.self)
        #expect(body == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=aa.bb-_.cc")
    }

    @Test(
        "Broken service-account files name the file and the field",
        arguments: [
            ("client_email", "missing field client_email"),
            ("private_key", "missing field private_key"),
            ("project_id", "missing field project_id"),
            ("token_uri", "missing field token_uri"),
        ])
    func missingFields(field: String, expected: String) throws {
        var o = try #require(try FCMFixture.serviceAccountJSON(tokenURI: "https://x.example/token").objectValue)
        o.removeValue(forKey: field)
        let path = try FCMFixture.writeServiceAccount(.object(o))
        #expect(throws: FCMServiceAccountError.self) { try FCMServiceAccount.load(path: path) }
        do {
            _ = try FCMServiceAccount.load(path: path)
        } catch {
            #expect(error.field == field)
            #expect(error.description == "service-account file \(path): \(expected)")
        }
    }

    @Test("Bad values in the service-account file are refused by field")
    func badValues() throws {
        let base = try #require(try FCMFixture.serviceAccountJSON(tokenURI: "https://x.example/token").objectValue)
        let cases: [(String, JSONValue, String)] = [
            ("private_key", "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", "private_key"),
            ("token_uri", "http://insecure.example/token", "token_uri"),
            ("client_email", 42, "client_email"),
            ("project_id", "a/b", "project_id"),
            ("type", "authorized_user", "type"),
        ]
        for (key, value, field) in cases {
            var o = base
            o[key] = value
            do {
                _ = try FCMServiceAccount(json: JSONValue.object(o).canonicalBytes, file: "/x/sa.json")
                Issue.record("\(key) accepted")
            } catch {
                #expect(error.field == field)
                #expect(error.description.contains("/x/sa.json"))
                #expect(error.description.contains(field))
                #expect(!error.description.contains("BEGIN"))
            }
        }
        #expect(throws: FCMServiceAccountError.self) { try FCMServiceAccount(json: Array("{nope".utf8), file: "f") }
        #expect(throws: FCMServiceAccountError.self) { try FCMServiceAccount.load(path: "/nonexistent/sa.json") }
    }

    // MARK: tokens

    @Test("Token answers: 200 → token, 4xx → rejected, 5xx → unavailable with Retry-After")
    func tokenResponses() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(
            FCMTokenResponse.classify(
                status: 200, body: Array(#"{"access_token":"t","expires_in":3599}"#.utf8), retryAfter: nil, now: now)
                == .token(FCMAccessToken(value: "t", expiresAt: now.addingTimeInterval(3599))))
        #expect(
            FCMTokenResponse.classify(
                status: 400,
                body: Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8),
                retryAfter: nil, now: now)
                == .rejected(status: 400, reason: "token endpoint answered 400: invalid_grant: Invalid JWT Signature."))
        #expect(
            FCMTokenResponse.classify(status: 503, body: Array("busy".utf8), retryAfter: "7", now: now)
                == .unavailable(status: 503, reason: "token endpoint answered 503: busy", retryAfter: .seconds(7)))
        if case .unavailable = FCMTokenResponse.classify(status: 200, body: Array("[]".utf8), retryAfter: nil, now: now)
        {
        } else {
            Issue.record("a 200 without a token must be retried")
        }
        let t = FCMAccessToken(value: "t", expiresAt: now.addingTimeInterval(3600))
        #expect(t.isUsable(at: now.addingTimeInterval(3539)))
        #expect(!t.isUsable(at: now.addingTimeInterval(3540)))
        #expect(FCMAccessToken(stateJSON: t.stateJSON) == t)
        #expect(FCMAccessToken(stateJSON: ["accessToken": 3]) == nil)
    }

    // MARK: error classification

    static let unregistered = #"""
        {"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND",
         "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}
        """#

    @Test("Bodies of any shape never trap and keep the raw text")
    func defensiveParsing() {
        let now = Date()
        let bodies = [
            "", "[]", "null", "42", #"{"error":"string"}"#, #"{"error":{"details":"x"}}"#,
            #"{"error":{"details":[1,null,{"@type":5},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":"x"}]}}"#,
            "<html><body>502 Bad Gateway</body></html>", String(repeating: "{", count: 10_000),
        ]
        for b in bodies {
            _ = FCMSendVerdict.classify(status: 400, body: Array(b.utf8), retryAfter: nil, now: now)
        }
        #expect(
            FCMSendVerdict.classify(
                status: 502, body: Array("<html>Bad Gateway</html>".utf8), retryAfter: nil, now: now)
                == .retry(reason: "FCM answered 502: <html>Bad Gateway</html>", retryAfter: nil))
        #expect(
            FCMSendVerdict.classify(
                status: 400,
                body: Array(
                    #"{"error":{"code":400,"message":"brand new","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"SHINY_NEW_CODE"}]}}"#
                        .utf8), retryAfter: nil, now: now)
                == .failed(reason: "FCM answered 400 SHINY_NEW_CODE: brand new"))
        #expect(
            FCMSendVerdict.classify(status: 404, body: Array(Self.unregistered.utf8), retryAfter: nil, now: now)
                == .dead(reason: "FCM answered 404 UNREGISTERED: Requested entity was not found."))
    }

    // MARK: payload

    @Test("The data map carries hapi's keys (winning on conflict), notification.data, the delivery and notification ids, all strings")
    func dataMap() throws {
        var n = HeraldNotification.sample(data: [
            "sessionId": "5f0c", "requestId": "r-17", "extra": "yes", "title": "spoof",
        ])
        n.body = "Done\nAGENT_NOTIFY_SUMMARY {\"agent\":\"claude\",\"summary\":\"ok\"}"
        n.type = "ready"
        let builder = FCMMessageBuilder()
        let prepared = try builder.prepare(n)
        let body = try builder.body(
            prepared, token: "tok", platform: "phone", deliveryId: "d-1", pushKey: nil, nonce: [])
        let data = try #require(body["message"]?["data"]?.objectValue)
        #expect(data.values.allSatisfy { $0.stringValue != nil })
        #expect(data["title"] == "Permission Request")  // hapi's key wins over notification.data.title
        #expect(data["extra"] == "yes")
        #expect(data["heraldDeliveryId"] == "d-1")
        #expect(data["heraldNotificationId"]?.stringValue == n.id, "the same id as the local stream and Web Push carry")
        #expect(data["contractVersion"] == "1")
        #expect(data["body"] == "Done")
        #expect(data["notifySummary"] == #"{"agent":"claude","summary":"ok"}"#)
        #expect(data["severity"] == "warning")
        #expect(data["url"] == "/sessions/5f0c")
        #expect(data["type"] == "ready")
        #expect(body["message"]?["token"] == "tok")
        #expect(body["message"]?["notification"] == nil)
        let android = body["message"]?["android"]
        #expect(android?["priority"] == "HIGH")
        #expect(android?["ttl"] == "3600s")
        #expect(android?["collapse_key"] == "ready-5f0c")
        #expect(android?["direct_boot_ok"] == nil)
        let wear = try builder.body(prepared, token: "t", platform: "wear", deliveryId: "d", pushKey: nil, nonce: [])
        #expect(wear["message"]?["android"]?["direct_boot_ok"] == true)
    }

    @Test("The spliced fan-out body is the same JSON as the built one")
    func plainBodyMatches() throws {
        let notes = [
            HeraldNotification.sample(), .sample(ttl: nil, priority: nil),
            .sample(android: ["direct_boot_ok": false, "channel_id": "c", "color": "#000000"]),
            HeraldNotification(id: "n", title: "t \"quoted\" \u{1F600}\n", data: ["k\u{0}": "v\\"]),
        ]
        for display in FCMDisplay.allCases {
            let builder = FCMMessageBuilder(display: display)
            for n in notes {
                let p = try builder.prepare(n)
                for platform in ["phone", "wear"] {
                    let spliced = try builder.plainBody(p, token: "tok\"en", platform: platform, deliveryId: "d/1")
                    let built = try builder.body(
                        p, token: "tok\"en", platform: platform, deliveryId: "d/1", pushKey: nil, nonce: [])
                    #expect(try JSONValue.parse(spliced) == built)
                }
            }
        }
    }

    @Test("Reserved data keys are refused before sending")
    func reservedKeys() {
        for key in ["from", "google.x", "gcm.notification", "message_type"] {
            #expect(throws: FCMPayloadError.self) {
                try FCMMessageBuilder().prepare(HeraldNotification.sample(data: [key: "v"]))
            }
        }
    }

    @Test("4096 bytes of keys and values pass, 4097 fail")
    func sizeLimit() throws {
        let builder = FCMMessageBuilder()
        var n = HeraldNotification(id: "n", type: "t", title: nil, body: "b")
        let base = try builder.prepare(n).data
        let used = FCMMessageBuilder.payloadSize(data: base, notificationBlock: nil) + "heraldDeliveryId".utf8.count + 1
        n.data = ["pad": String(repeating: "a", count: 4096 - used - 3)]
        let ok = try builder.prepare(n)
        #expect(throws: Never.self) {
            try builder.body(ok, token: "t", platform: "phone", deliveryId: "d", pushKey: nil, nonce: [])
        }
        #expect(throws: Never.self) { try builder.plainBody(ok, token: "t", platform: "phone", deliveryId: "d") }
        n.data = ["pad": String(repeating: "a", count: 4096 - used - 2)]
        let over = try builder.prepare(n)
        #expect(throws: FCMPayloadError.self) {
            try builder.body(over, token: "t", platform: "phone", deliveryId: "d", pushKey: nil, nonce: [])
        }
        #expect(throws: FCMPayloadError.self) {
            try builder.plainBody(over, token: "t", platform: "phone", deliveryId: "d")
        }
    }

    @Test("display: notification adds the block and android.notification overrides; data mode ignores them")
    func displayAndOverrides() throws {
        let android: [String: JSONValue] = [
            "channel_id": "alerts", "visibility": "secret", "color": "#ff8800", "sticky": true,
            "notification_priority": "max", "tag": "t1", "icon": "ic_stat", "priority": "normal", "ttl": 60,
            "collapse_key": "ck", "frobnicate": 1,
        ]
        let shown = FCMMessageBuilder(display: .notification)
        let p = try shown.prepare(HeraldNotification.sample(android: android))
        let body = try shown.body(p, token: "t", platform: "phone", deliveryId: "d", pushKey: nil, nonce: [])
        let m = try #require(body["message"])
        #expect(m["notification"] == ["title": "Permission Request", "body": "Claude Bash: rm -rf build"])
        #expect(
            m["android"]?["notification"]
                == [
                    "channel_id": "alerts", "visibility": "SECRET", "color": "#ff8800", "sticky": true,
                    "notification_priority": "PRIORITY_MAX", "tag": "t1", "icon": "ic_stat",
                ])
        #expect(m["android"]?["priority"] == "NORMAL")
        #expect(m["android"]?["ttl"] == "60s")
        #expect(m["android"]?["collapse_key"] == "ck")
        #expect(p.warnings == ["android.frobnicate ignored: not a key the fcm channel supports"])

        let data = FCMMessageBuilder()
        let q = try data.prepare(
            HeraldNotification.sample(android: ["channel_id": "alerts", "priority": "normal"]))
        let plain = try data.body(q, token: "t", platform: "phone", deliveryId: "d", pushKey: nil, nonce: [])
        #expect(plain["message"]?["notification"] == nil)
        #expect(plain["message"]?["android"]?["notification"] == nil)
        #expect(plain["message"]?["android"]?["priority"] == "NORMAL")
        #expect(q.warnings == ["android.channel_id ignored: display keys need display: notification"])

        for bad: [String: JSONValue] in [["color": "red"], ["visibility": "loud"], ["sticky": "yes"], ["ttl": -1]] {
            #expect(throws: FCMPayloadError.self) { try shown.prepare(HeraldNotification.sample(android: bad)) }
        }
        #expect(
            try FCMMessageBuilder().prepare(HeraldNotification.sample(priority: .normal)).android["priority"]
                == "NORMAL")
        #expect(try FCMMessageBuilder().prepare(HeraldNotification.sample(ttl: nil)).android["ttl"] == nil)
    }

    @Test("hapi-v1 matches the shared envelope vector and opens with HeraldCrypto")
    func envelopeVector() throws {
        let url = FCMFixture.testsDirectory.appendingPathComponent("Vectors/fcm/hapi-envelope-v1.json")
        let vector = try JSONValue.parse(Array(try Data(contentsOf: url)))
        let key = try hex(try #require(vector["key_hex"]?.stringValue))
        let nonce = try hex(try #require(vector["nonce_hex"]?.stringValue))
        let n = HeraldNotification(
            id: "n", type: "ready", title: "HAPI", body: "Ready for input",
            data: ["sessionId": "s1", "x": "not in envelope"])
        let builder = FCMMessageBuilder(encryption: .hapiV1)
        let prepared = try builder.prepare(n)
        #expect(prepared.plaintext.map { String(decoding: $0, as: UTF8.self) } == vector["plaintext"]?.stringValue)
        let data = try builder.data(prepared, deliveryId: "d", pushKey: key, nonce: nonce)
        #expect(data == ["v": "1", "e": try #require(vector["envelope_b64"]?.stringValue)])
        let opened = try HapiPayload.open(envelope: try #require(data["e"]), key: key)
        #expect(String(decoding: opened, as: UTF8.self) == vector["plaintext"]?.stringValue)
    }

    @Test("phone and wear devices may carry a 32-byte base64 pushKey")
    func pushKeyRegistration() throws {
        let good = Base64.encode(Array(repeating: 7, count: 32))
        let d = try HeraldChannels.registry.device(
            jsonText: #"{"deviceId":"p","platform":"phone","token":"abc","pushKey":"\#(good)"}"#)
        #expect(d.string("pushKey") == good)
        #expect(throws: ValidationError.self) {
            try HeraldChannels.registry.device(
                jsonText: #"{"deviceId":"p","platform":"wear","token":"abc","pushKey":"AAAA"}"#)
        }
        #expect(throws: ValidationError.self) {
            try HeraldChannels.registry.device(
                jsonText: #"{"deviceId":"p","platform":"phone","token":"abc","other":"x"}"#)
        }
    }

    func hex(_ s: String) throws -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let a = it.next(), let b = it.next() {
            guard let v = UInt8(String([a, b]), radix: 16) else { throw FCMFixtureError("bad hex") }
            out.append(v)
        }
        return out
    }
}
