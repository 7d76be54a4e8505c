import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import APNsChannel

@Suite("APNs payloads")
struct APNsPayloadTests {
    let now = Date(timeIntervalSince1970: 1_767_225_600)
    let device = APNsTestSupport.device("iphone", token: "ab12")

    func prepare(
        _ n: HeraldNotification, content: APNsContentMode = .full, encryption: APNsEncryption = .none,
        badge: Int? = nil
    ) throws -> APNsPreparedNotification {
        try APNsPayloadBuilder(topic: "com.example.app", content: content, encryption: encryption)
            .prepare(DeliveryRequest(notification: n, targets: [], pendingBadge: badge), now: now)
    }

    func body(_ p: APNsPreparedNotification, device: Device? = nil) throws -> JSONValue {
        try JSONValue.parse(try p.body(for: device ?? self.device, nonce: Array(0..<12)))
    }

    @Test func fullAlert() throws {
        let n = HeraldNotification(
            type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            url: "/sessions/5f0c", data: ["sessionId": "5f0c", "aps": "ignored", "requestId": "r-17"],
            actions: [.init(id: "approve", title: "Allow")], ttl: 3600, ios: ["subtitle": "hapi"])
        let p = try prepare(n, badge: 3)
        #expect(p.pushType == .alert)
        #expect(p.topic == "com.example.app")
        #expect(p.priority == 10)
        #expect(p.expiration == now.secondsSince1970 + 3600)
        #expect(p.collapseID == "permission-request-5f0c")
        let expected: JSONValue = [
            "aps": [
                "alert": ["title": "Permission Request", "subtitle": "hapi", "body": "Claude Bash: rm -rf build"],
                "sound": "default", "badge": 3, "thread-id": "permission-request-5f0c",
                "category": "permission-request", "mutable-content": 1,
            ],
            "sessionId": "5f0c", "requestId": "r-17", "url": "/sessions/5f0c",
            "heraldNotificationId": .string(n.id),
        ]
        #expect(try body(p) == expected)
    }

    @Test func soundCategoryAndBadgeOverrides() throws {
        let n = HeraldNotification(
            title: "t", tag: "x", actions: [.init(id: "a", title: "A")], badge: 7,
            ios: ["sound": "chime.aiff", "category": "CAT"])
        let aps = try body(try prepare(n, badge: 1))["aps"]
        #expect(aps?["sound"] == "chime.aiff")
        #expect(aps?["category"] == "CAT")
        #expect(aps?["badge"] == 7)
        #expect(aps?["thread-id"] == "x")
        let silent = try body(try prepare(HeraldNotification(title: "t", ios: ["sound": nil])))["aps"]
        #expect(silent?["sound"] == nil)
        #expect(silent?["category"] == nil)
        #expect(silent?["badge"] == nil)
        #expect(try prepare(HeraldNotification(title: "t")).expiration == 0)
        #expect(try prepare(HeraldNotification(title: "t", ttl: 0)).expiration == 0)
    }

    @Test func notifySummaryIsComposedNotDuplicated() throws {
        let n = HeraldNotification(
            type: "ready", title: "Done",
            body: "All tests pass\nAGENT_NOTIFY_SUMMARY {\"agent\":\"claude\",\"summary\":\"green\"}")
        let b = try body(try prepare(n))
        #expect(b["aps"]?["alert"]?["body"] == "All tests pass")
        #expect(b["notifySummary"]?.stringValue == NotifySummary.compose(n).summary?.canonicalString)
    }

    @Test func genericContentHasNoMessageContent() throws {
        let n = HeraldNotification(
            type: "permission-request", title: "Secret title", body: "rm -rf secret",
            data: ["sessionId": "5f0c", "sessionName": "claude - hapi", "requestId": "r-17"])
        let b = try body(try prepare(n, content: .generic))
        #expect(b["aps"]?["alert"]?["title"]?.stringValue == GenericContent.title(for: "permission-request"))
        #expect(b["aps"]?["alert"]?["body"]?.stringValue == GenericContent.body(for: n))
        #expect(b["sessionId"] == "5f0c")
        #expect(b["requestId"] == nil)
        #expect(b["heraldNotificationId"]?.stringValue == n.id, "the id is not content: the app de-duplicates on it")
        let text = b.canonicalString
        #expect(!text.contains("Secret") && !text.contains("rm -rf"))
    }

    @Test func backgroundAndVoIP() throws {
        let silent = HeraldNotification(id: "n-1", body: "x", data: ["k": "v"], ios: ["pushType": "background"])
        let bg = try prepare(silent)
        #expect(bg.pushType == .background)
        #expect(bg.priority == 5)
        #expect(try body(bg) == ["aps": ["content-available": 1], "k": "v", "heraldNotificationId": "n-1"])
        let voip = try prepare(HeraldNotification(title: "Call", ios: ["pushType": "voip"]))
        #expect(voip.pushType == .voip)
        #expect(voip.topic == "com.example.app.voip")
        #expect(voip.priority == 10)
        #expect(throws: APNsPayloadError.self) {
            try prepare(HeraldNotification(title: "t", ios: ["pushType": "mdm"]))
        }
    }

    @Test func headers() throws {
        let p = try prepare(HeraldNotification(title: "t", tag: "tag-1", ttl: 60))
        let h = Dictionary(
            uniqueKeysWithValues: p.headers(apnsID: "ID", providerToken: "JWT").map { ($0.name, $0.value) })
        #expect(
            h == [
                "authorization": "bearer JWT", "apns-push-type": "alert", "apns-topic": "com.example.app",
                "apns-priority": "10", "apns-expiration": String(now.secondsSince1970 + 60), "apns-id": "ID",
                "apns-collapse-id": "tag-1",
            ])
        let noTag = try prepare(HeraldNotification(title: "t"))
        #expect(!noTag.headers(apnsID: "ID", providerToken: "JWT").contains { $0.name == "apns-collapse-id" })
    }

    @Test func apnsIDIsTheDeliveryIdAsLowerCaseUUID() {
        let pattern = APNsTestSupport.apnsIDPattern
        #expect(
            APNsPayloadBuilder.apnsID(for: "123E4567-E89B-12D3-A456-4266554400A0")
                == "123e4567-e89b-12d3-a456-4266554400a0")
        #expect(
            APNsPayloadBuilder.apnsID(for: "123e4567-e89b-12d3-a456-4266554400a0")
                == "123e4567-e89b-12d3-a456-4266554400a0")
        let derived = APNsPayloadBuilder.apnsID(for: "not-a-uuid")
        #expect(derived == APNsPayloadBuilder.apnsID(for: "not-a-uuid"))
        #expect(UUID(uuidString: derived) != nil)
        #expect(APNsTestSupport.matches(derived, pattern))
        #expect(Array(derived)[14] == "8")  // RFC 9562 version 8 (name-based, SHA-256)
        #expect("89ab".contains(Array(derived)[19]))  // RFC 9562 variant
        for id in ["", "delivery-1", "123e4567e89b12d3a4564266554400a0", "123e4567-e89b-12d3-a456-4266554400ag"] {
            #expect(APNsTestSupport.matches(APNsPayloadBuilder.apnsID(for: id), pattern), "\(id)")
        }
    }

    @Test func collapseIDTruncatesOnUTF8Boundaries() throws {
        // 40 two-byte characters = 80 bytes → 32 characters = 64 bytes.
        let two = try prepare(HeraldNotification(title: "t", tag: String(repeating: "é", count: 40)))
        #expect(two.collapseID == String(repeating: "é", count: 32))
        // 22 three-byte characters = 66 bytes → 21 characters = 63 bytes (no split character).
        let three = try prepare(HeraldNotification(title: "t", tag: String(repeating: "€", count: 22)))
        #expect(three.collapseID == String(repeating: "€", count: 21))
        #expect(three.collapseID?.utf8.count == 63)
        // A four-byte emoji straddling byte 64.
        let emoji = try prepare(HeraldNotification(title: "t", tag: String(repeating: "a", count: 62) + "😀z"))
        #expect(emoji.collapseID == String(repeating: "a", count: 62))
        let exact = String(repeating: "b", count: 64)
        #expect(try prepare(HeraldNotification(title: "t", tag: exact)).collapseID == exact)
        // The same cut applies to thread-id.
        #expect(try body(two)["aps"]?["thread-id"]?.stringValue == String(repeating: "é", count: 32))
    }

    // MARK: Size

    /// A notification whose body makes the payload exactly `bytes` long.
    func sized(_ bytes: Int, pushType: String? = nil) throws -> APNsPreparedNotification {
        var ios: [String: JSONValue] = [:]
        if let pushType { ios["pushType"] = .string(pushType) }
        let empty = try prepare(HeraldNotification(title: "t", body: "", ios: ios))
        let base = try empty.body(for: device, nonce: []).count
        return try prepare(
            HeraldNotification(
                title: "t",
                body: String(repeating: "ü", count: (bytes - base) / 2) + ((bytes - base) % 2 == 1 ? "x" : ""), ios: ios
            ))
    }

    @Test func sizeLimitCountsUTF8Bytes() throws {
        #expect(try sized(4096).body(for: device, nonce: []).count == 4096)
        #expect(throws: APNsPayloadError.self) { try sized(4097).body(for: device, nonce: []) }
        #expect(try sized(5120, pushType: "voip").body(for: device, nonce: []).count == 5120)
        #expect(throws: APNsPayloadError.self) { try sized(5121, pushType: "voip").body(for: device, nonce: []) }
        do {
            _ = try sized(4097).body(for: device, nonce: [])
        } catch let error as APNsPayloadError {
            #expect(error.reason.contains("4097 bytes") && error.reason.contains("4096"))
        }
    }

    // MARK: hapi-v1

    @Test func hapiEnvelopeReproducesTheFixture() throws {
        let fixture = try JSONValue.parse(
            Array(
                try Data(contentsOf: APNsTestSupport.vectorsDirectory.appendingPathComponent("hapi-envelope-v1.json"))))
        let key = hex(fixture["key_hex"]?.stringValue ?? "")
        let nonce = hex(fixture["nonce_hex"]?.stringValue ?? "")
        let n = HeraldNotification(
            type: "ready", title: "HAPI", body: "Ready for input", data: ["sessionId": "s1"])
        let p = try prepare(n, encryption: .hapiV1)
        #expect(p.hapiPlaintext == Array((fixture["plaintext"]?.stringValue ?? "").utf8))
        let dev = APNsTestSupport.device("iphone", token: "ab12", pushKey: key)
        let b = try JSONValue.parse(try p.body(for: dev, nonce: nonce))
        let expected = try JSONValue.parse(
            "{\"aps\":{\"mutable-content\":1,\"alert\":{\"title\":\"HAPI\",\"body\":\"New activity\"},\"sound\":\"default\"},"
                + "\"hapi\":{\"v\":1,\"e\":\"\(fixture["envelope_b64"]?.stringValue ?? "")\"}}")
        #expect(b == expected)
        // A device without a pushKey is refused, not sent in clear.
        #expect(throws: APNsPayloadError.self) { try p.body(for: device, nonce: nonce) }
    }

    @Test func hapiGenericEncryptsGenericText() throws {
        let key = Array(repeating: UInt8(7), count: 32)
        let n = HeraldNotification(type: "ready", title: "Secret", body: "secret body", data: ["sessionName": "s"])
        let p = try prepare(n, content: .generic, encryption: .hapiV1)
        let dev = APNsTestSupport.device("iphone", token: "ab12", pushKey: key)
        let e = try body(p, device: dev)["hapi"]?["e"]?.stringValue ?? ""
        let plain = try JSONValue.parse(try HapiPayload.open(envelope: e, key: key))
        #expect(plain["title"]?.stringValue == GenericContent.title(for: "ready"))
        #expect(plain["body"] == "s")
    }

    // MARK: Canonical JSON

    @Test func canonicalJSONOnTrickyStringsMatchesPython() throws {
        let tricky = "a/b \\ \"q\" 😀 \u{2028}\u{2029} \u{7F} \u{0}\u{1}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1F} é"
        let n = HeraldNotification(
            title: tricky, body: "line1\nline2", data: ["path": "/x/y", "emoji": "🎉", "ctl": "\u{1B}[0m"],
            ios: ["sound": ["name": "a/b.caf", "critical": 1, "volume": 0.5]])
        let laN = HeraldNotification(
            title: "t",
            liveActivity: [
                "event": "update", "timestamp": 1_767_225_600, "relevanceScore": 0.25,
                "contentState": ["nested": ["deeper": [1, 2.5, "\u{2028}", ["k": nil, "b": true]]], "z": "/"],
            ])
        for p in [try prepare(n), try prepare(laN)] {
            let bytes = try p.body(for: device, nonce: [])
            let line = Base64.encode(bytes)
            let out = try APNsTestSupport.python("canonical_json.py", [], stdin: line + "\n")
            let python = try Base64.decode(out.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(String(decoding: bytes, as: UTF8.self) == String(decoding: python, as: UTF8.self))
            #expect(bytes == python)
        }
        // Hand-computed JSON.stringify bytes for the escapes (JS: short escapes, lowercase \u00XX,
        // '/' and U+2028 raw).
        let s: JSONValue = ["k": .string("/\u{2028}\u{1}\u{1F}\u{8}\u{C}\n\r\t\"\\😀")]
        #expect(s.canonicalString == "{\"k\":\"/\u{2028}\\u0001\\u001f\\b\\f\\n\\r\\t\\\"\\\\😀\"}")
        // Key order is by UTF-16 code unit (JS), where Python would put U+FF5E first.
        let keys: JSONValue = ["\u{FF5E}": 1, "😀": 2, "a": 3]
        #expect(keys.canonicalString == "{\"a\":3,\"😀\":2,\"\u{FF5E}\":1}")
    }

    func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex, let j = s.index(i, offsetBy: 2, limitedBy: s.endIndex) {
            out.append(UInt8(s[i..<j], radix: 16) ?? 0)
            i = j
        }
        return out
    }
}
