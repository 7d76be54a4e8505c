import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldYAML
import Router
import RouterTesting
import Testing

@testable import WebPushChannel

func webPushConfig(_ yaml: String, allowHosts: [String] = []) throws -> ChannelConfig {
    guard let root = try YAMLParser.parse(yaml) else { throw ValidationError(field: "yaml", "empty") }
    let node = ConfigNode(yaml: root, file: "test.yaml", environment: [:], baseDirectory: "/tmp")
    return try ChannelConfig(name: "webpush", node: node, ignoring: ["type"], allowHosts: allowHosts)
}

@Suite struct WebPushUnitTests {
    @Test func topicRules() {
        #expect(WebPushHeaders.topic(for: nil) == nil)
        #expect(WebPushHeaders.topic(for: "session5f0c") == "session5f0c")
        #expect(WebPushHeaders.topic(for: String(repeating: "a", count: 32)) == String(repeating: "a", count: 32))
        for tag in ["permission-5f0c", String(repeating: "a", count: 33), "tag with space", "ümlaut"] {
            let t = WebPushHeaders.topic(for: tag)
            #expect(t != nil)
            #expect((t?.count ?? 0) <= 32 && (t?.count ?? 0) >= 20)
            #expect(t?.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } == true)
            #expect(WebPushHeaders.topic(for: tag) == t)  // stable
        }
        #expect(WebPushHeaders.topic(for: "permission-5f0c") != WebPushHeaders.topic(for: "permission-5f0d"))
    }

    @Test func urgencyTable() {
        #expect(WebPushHeaders.urgency(priority: nil, severity: nil) == "normal")
        #expect(WebPushHeaders.urgency(priority: .high, severity: .info) == "high")
        #expect(WebPushHeaders.urgency(priority: nil, severity: .error) == "high")
        #expect(WebPushHeaders.urgency(priority: .normal, severity: .warning) == "high")
        #expect(WebPushHeaders.urgency(priority: .low, severity: .info) == "low")
        #expect(WebPushHeaders.urgency(priority: .low, severity: .error) == "high")
        #expect(WebPushHeaders.urgency(priority: .normal, severity: .success) == "normal")
    }

    @Test func ttlRules() {
        #expect(WebPushHeaders.ttl(nil) == 86_400)
        #expect(WebPushHeaders.ttl(0) == 0)
        #expect(WebPushHeaders.ttl(3600, fallback: 60) == 3600)
        #expect(WebPushHeaders.ttl(nil, fallback: 60) == 60)
    }

    @Test func paddingBuckets() {
        let p = WebPushPadding.default
        #expect(p.recordLength(forPayload: 0) == 256)
        #expect(p.recordLength(forPayload: 255) == 256)
        #expect(p.recordLength(forPayload: 256) == 512)
        #expect(p.recordLength(forPayload: 3839) == 3840)
        #expect(p.recordLength(forPayload: 3840) == 3994)
        #expect(p.recordLength(forPayload: 3993) == 3994)
        #expect(p.recordLength(forPayload: 3994) == nil)
        #expect(WebPushPadding.none.recordLength(forPayload: 41) == 42)
        #expect(WebPushPadding.none.recordLength(forPayload: 3994) == nil)
    }

    @Test func responseClassification() {
        let now = Date(timeIntervalSince1970: 0)
        #expect(WebPushResponse.classify(status: 201, body: [], retryAfter: nil, now: now) == .delivered)
        #expect(WebPushResponse.classify(status: 202, body: [], retryAfter: nil, now: now) == .delivered)
        let gone = Array(
            #"{"code":410,"errno":103,"error":"Gone","message":"Request did not validate expired subscription","more_info":"x"}"#
                .utf8)
        #expect(
            WebPushResponse.classify(status: 410, body: gone, retryAfter: nil, now: now)
                == .dead(
                    reason: "push service answered 410: errno 103: Gone: Request did not validate expired subscription")
        )
        guard case .dead = WebPushResponse.classify(status: 404, body: [], retryAfter: nil, now: now) else {
            Issue.record("404 is dead")
            return
        }
        #expect(
            WebPushResponse.classify(status: 429, body: [], retryAfter: "120", now: now)
                == .retry(reason: "push service answered 429", after: .seconds(120)))
        #expect(
            WebPushResponse.classify(status: 503, body: Array("busy\n".utf8), retryAfter: nil, now: now)
                == .retry(reason: "push service answered 503: busy", after: nil))
        #expect(
            WebPushResponse.classify(
                status: 403, body: Array(#"{"reason":"BadJwtToken"}"#.utf8), retryAfter: nil, now: now)
                == .failed(reason: "push service answered 403: BadJwtToken", isConfigProblem: true))
        guard case .failed(_, false) = WebPushResponse.classify(status: 413, body: [], retryAfter: nil, now: now) else {
            Issue.record("413 is failed")
            return
        }
        // Odd bodies never crash the parser.
        for body in [#"{"errno":"x","code":null}"#, "[1,2]", "\u{1}\u{2}", #"{"errno":99999}"#] {
            _ = WebPushResponse.describe(status: 400, body: Array(body.utf8))
        }
        #expect(
            WebPushResponse.describe(status: 400, body: Array(#"{"errno":99999}"#.utf8))
                == "push service answered 400: errno 99999")
    }

    @Test func payloadShape() throws {
        let n = HeraldNotification(
            id: "n1", type: "permission-request", title: "T", body: "B", severity: .warning, url: "/s/1",
            data: ["sessionId": "5f0c"], actions: [NotificationAction(id: "approve", title: "Allow")], badge: 3,
            web: ["icon": "/icon.png", "other": "x"])
        let o = try JSONValue.parse(WebPushPayload.bytes(WebPushPayload.object(for: n, badge: n.badge), deviceId: "d1"))
        #expect(
            o == [
                "id": "n1", "type": "permission-request", "title": "T", "body": "B", "severity": "warning",
                "url": "/s/1", "tag": "permission-request-5f0c", "data": ["sessionId": "5f0c"],
                "actions": [["action": "approve", "title": "Allow"]], "badge": 3, "icon": "/icon.png",
                "deviceId": "d1",
            ])
    }

    @Test("The payload template splices each device id into bytes identical to a full serialisation")
    func payloadTemplate() throws {
        let n = HeraldNotification(
            id: "n1", type: "ready", title: "Ready \u{1F600}", body: "line\u{2028}two </script>", url: "/s/1",
            data: ["sessionId": "5f0c", "z": "last", "a": "first"], badge: 2)
        let base = WebPushPayload.object(for: n, badge: n.badge)
        let template = WebPushPayload.Template(base)
        for id in ["d1", "", "phone \"quoted\"", "\u{00E9}t\u{00E9}-\u{1F4F1}", "a/b\\c", "\u{7F}ctl\u{1F}"] {
            #expect(template.bytes(deviceId: id) == WebPushPayload.bytes(base, deviceId: id), "deviceId \(id)")
        }
        #expect(template.bytes(deviceId: nil) == WebPushPayload.bytes(base, deviceId: nil))
        // A payload that already carries the marker text falls back to serialising per device.
        var tricky = base
        tricky["data"] = ["x": .string("\u{0}herald-device-id\u{0}")]
        let fallback = WebPushPayload.Template(tricky)
        #expect(fallback.bytes(deviceId: "d9") == WebPushPayload.bytes(tricky, deviceId: "d9"))
    }

    @Test func configParsing() throws {
        let s = try WebPushSettings.parse(
            webPushConfig(
                #"{type: webpush, vapid: {subject: "mailto:ops@example.com", expiration: 6h}, padding: none, default-ttl: 1h}"#,
                allowHosts: ["127.0.0.1"]))
        #expect(s.subject == "mailto:ops@example.com")
        #expect(s.expiration == .seconds(21_600))
        #expect(s.padding == .none)
        #expect(s.defaultTTL == 3600)
        #expect(s.allowHosts == ["127.0.0.1"])
        let d = try WebPushSettings.parse(webPushConfig(#"{vapid: {subject: "https://example.com"}}"#))
        #expect(d.expiration == .seconds(43_200) && d.padding == .bucket(256) && d.defaultTTL == 86_400)
        for bad in [
            "{padding: none}", "{vapid: {}}", #"{vapid: {subject: "mailto:x@localhost"}}"#,
            #"{vapid: {subject: "mailto: <ops@example.com>"}}"#,
            #"{vapid: {subject: "mailto:o@example.com", expiration: 25h}}"#,
            #"{vapid: {subject: "mailto:o@example.com", keys: []}}"#,
            #"{vapid: {subject: "mailto:o@example.com"}, padding: big}"#,
            #"{vapid: {subject: "mailto:o@example.com"}, default-ttl: 40d}"#,
        ] {
            #expect(throws: ConfigError.self, "\(bad)") { _ = try WebPushSettings.parse(webPushConfig(bad)) }
        }
        let e = #expect(throws: ConfigError.self) {
            _ = try WebPushSettings.parse(webPushConfig("{\n  vapid: {subject: \"https://localhost\"}}"))
        }
        #expect(e?.description.hasPrefix("test.yaml:2:") == true)
    }
}

/// The subscription cache is bounded (each entry holds an imported key): a fan-out to many more
/// browsers than it keeps parses each, and the cache never holds more than two generations.
@Suite struct SubscriptionCacheTests {
    @Test func holdsAtMostTwoGenerationsAndStillParsesEveryDevice() throws {
        let cache = SubscriptionCache(generationSize: 4)
        let browsers = try (0..<25).map { try TestSubscriber(endpoint: "https://push.example.net/s/\($0)") }
        for round in 0..<2 {
            for (i, b) in browsers.enumerated() {
                let sub = try cache.subscription(for: b.device("web-\(i)"), allowHosts: [])
                #expect(sub.endpoint == b.endpoint, "round \(round)")
                #expect(sub.key.authSecret == b.auth)
                #expect(cache.count <= 8)
            }
        }
        #expect(cache.count >= 4)
    }

    @Test func aSmallAudienceStaysCachedAcrossNotifications() throws {
        let cache = SubscriptionCache(generationSize: 4)
        let browsers = try (0..<4).map { try TestSubscriber(endpoint: "https://push.example.net/s/\($0)") }
        let first = try browsers.enumerated().map {
            try cache.subscription(for: $1.device("web-\($0)"), allowHosts: [])
        }
        for _ in 0..<3 {
            for (i, b) in browsers.enumerated() {
                // The same parsed key object: found, not parsed again.
                let again = try cache.subscription(for: b.device("web-\(i)"), allowHosts: [])
                #expect(again.key.publicKey === first[i].key.publicKey)
            }
        }
        #expect(cache.count == 4)
    }

    @Test func aChangedRegistrationIsParsedAfresh() throws {
        let cache = SubscriptionCache()
        let b = try TestSubscriber(endpoint: "https://push.example.net/s/1")
        _ = try cache.subscription(for: b.device("web-1"), allowHosts: [])
        var bad = b.device("web-1")
        bad.fields["subscription"] = [
            "endpoint": .string("http://push.example.net/s/1"), "keys": ["p256dh": "x", "auth": "y"],
        ]
        #expect(throws: ValidationError.self) { try cache.subscription(for: bad, allowHosts: []) }
    }
}
