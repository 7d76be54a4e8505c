import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

/// Herald as a Pulse Relay (docs/pulse-relay.md), end to end over HTTP with a fake APNs: the app's
/// API, a site's signed pushes, the Live Activity pushes APNs gets, the guide's status table, and
/// bad input that never reaches APNs.
@Suite("Pulse relay end to end", .serialized, .stopsFakeHTTPServers)
struct PulseRelayServeTests {
    static func with(extra: String = "", _ body: (PulseRelayRig) async throws -> Void) async throws {
        try await RelayRig.with(relays: try PulseRelayRig.relays(extra: extra), withHub: false) { rig in
            try await rig.apnsAnswers(200)
            try await body(PulseRelayRig(rig: rig))
        }
    }

    /// start → the push-to-start token; update/end → the activity's token; the headers and payloads
    /// of the issue; 429 while the started activity has not reported its token; 404 after end.
    @Test func startUpdateEndReachAPNs() async throws {
        // A one-hour update interval: "too soon" does not depend on how fast this machine is.
        try await Self.with(extra: "update-interval: 1h") { p in
            let phone = try await p.register()
            let site = try await p.mint(phone)
            let start = try await p.push(
                site, PulseRelayRig.body("start", revision: 1, extra: ["staleDate": 1_793_000_600]))
            #expect(start.status == 200, "\(start.text)")
            #expect(PulseRelayRig.json(start) == ["ok": true])
            var sent = try await p.rig.apns.requests()
            let first = try #require(sent.first)
            #expect(first.path == "/3/device/\(PulseRelayRig.startToken)")
            #expect(first.header("apns-push-type") == "liveactivity")
            #expect(first.header("apns-topic") == "com.example.app.push-type.liveactivity")
            #expect(first.header("apns-priority") == "10")
            let aps = try #require(try JSONValue.parse(first.body)["aps"])
            #expect(aps["event"] == "start")
            #expect(aps["attributes-type"] == "PulseAttributes")
            #expect(aps["attributes"] == ["site": "Example Shop", "ref": "order-1024"])
            #expect(
                aps["content-state"]
                    == [
                        "title": "订单 #1024", "summary": "骑手已取餐", "status": "running", "revision": 1,
                        "site": "Example Shop",
                    ])
            #expect(
                aps["alert"] == ["title": "Example Shop", "body": "订单 #1024", "sound": "default"],
                "start uses the title")
            #expect(aps["stale-date"] == 1_793_000_600)
            #expect(aps["timestamp"]?.intValue != nil)

            let early = try await p.push(site, PulseRelayRig.body(revision: 2))
            #expect(early.status == 429, "the activity has not reported its token yet")
            #expect(early.headers["retry-after"] != nil)
            #expect(try await p.activity(phone, site, ref: "order-1024") == 200)
            let update = try await p.push(site, PulseRelayRig.body(revision: 3, extra: ["relevanceScore": 0.25]))
            #expect(update.status == 200, "\(update.text)")
            sent = try await p.rig.apns.requests()
            #expect(sent.count == 2)
            let second = try #require(sent.last)
            #expect(second.path == "/3/device/\(PulseRelayRig.activityToken)")
            #expect(second.header("apns-priority") == "5", "no alert: priority 5")
            let updateAPS = try #require(try JSONValue.parse(second.body)["aps"])
            #expect(updateAPS["event"] == "update")
            #expect(updateAPS["relevance-score"] == 0.25)
            #expect(updateAPS["alert"] == nil && updateAPS["attributes"] == nil)

            let tooSoon = try await p.push(site, PulseRelayRig.body(revision: 4))
            #expect(tooSoon.status == 429)
            #expect(tooSoon.headers["retry-after"].flatMap { Int($0) }.map { $0 > 3000 } == true)
            let stale = try await p.push(site, PulseRelayRig.body(revision: 3))
            #expect(stale.status == 409)

            let end = try await p.push(
                site, PulseRelayRig.body("end", revision: 5, alert: "已送达", extra: ["dismissalDate": 1_793_001_000]))
            #expect(end.status == 200)
            let endRequest = try #require(try await p.rig.apns.requests().last)
            let endAPS = try #require(try JSONValue.parse(endRequest.body)["aps"])
            #expect(endAPS["dismissal-date"] == 1_793_001_000)
            #expect(endAPS["alert"]?["body"] == "已送达")
            let after = try await p.push(site, PulseRelayRig.body(revision: 6))
            #expect(after.status == 404)
            #expect(try await p.rig.apns.requests().count == 3)
        }
    }

    /// An alert on update/end more often than every 30 s per ref is dropped and said so.
    @Test func alertOverTheLimitIsDropped() async throws {
        try await Self.with(extra: "update-interval: 0s") { p in
            let phone = try await p.register()
            let site = try await p.mint(phone)
            try await p.activity(phone, site, ref: "r1")
            #expect(try await p.push(site, PulseRelayRig.body(ref: "r1", revision: 1, alert: "one")).status == 200)
            let second = try await p.push(site, PulseRelayRig.body(ref: "r1", revision: 2, alert: "two"))
            #expect(second.status == 200)
            #expect(PulseRelayRig.json(second) == ["ok": true, "alertDropped": true])
            let last = try #require(try await p.rig.apns.requests().last)
            #expect(last.header("apns-priority") == "5")
            #expect(try JSONValue.parse(last.body)["aps"]?["alert"] == nil)
        }
    }

    /// The app's API: revoke → 403, delete the phone → 410, re-register the same token → the old
    /// phone's keys get 410; wrong credentials → 401.
    @Test func appAPIRevokesAndDeletes() async throws {
        try await Self.with { p in
            let phone = try await p.register()
            let shop = try await p.mint(phone)
            let blog = try await p.mint(phone, name: "Blog")
            let keyBytes = try Base64.urlDecode(shop.pushKey)
            #expect(shop.pushKey.count == 43 && keyBytes.count == 32)
            #expect(
                try await p.call(
                    "POST", "/v1/pulse/devices/\(phone.deviceId)/sites", credential: "pdc_wrong", json: #"{"name":"x"}"#
                ).status == 401)
            #expect(
                try await p.call("POST", "/v1/pulse/devices/\(phone.deviceId)/sites", json: #"{"name":"x"}"#).status
                    == 401)
            #expect(
                try await p.call(
                    "POST", "/v1/pulse/devices/\(phone.deviceId)/sites", credential: phone.credential,
                    json: #"{"name":""}"#
                ).status == 400)
            #expect(
                try await p.call(
                    "DELETE", "/v1/pulse/devices/\(phone.deviceId)/sites/\(shop.sourceId)", credential: phone.credential
                ).status == 200)
            #expect(try await p.push(shop, PulseRelayRig.body("start", revision: 1)).status == 403)
            #expect(try await p.push(blog, PulseRelayRig.body("start", revision: 1)).status == 200)
            #expect(
                try await p.call("DELETE", "/v1/pulse/devices/\(phone.deviceId)", credential: phone.credential).status
                    == 200)
            #expect(try await p.push(blog, PulseRelayRig.body("start", ref: "b", revision: 2)).status == 410)
            #expect(
                try await p.call(
                    "POST", "/v1/pulse/devices/\(phone.deviceId)/sites", credential: phone.credential,
                    json: #"{"name":"x"}"#
                ).status == 410)

            let again = try await p.register()
            let site = try await p.mint(again)
            let replaced = try await p.register()
            #expect(replaced.deviceId != again.deviceId)
            #expect(
                try await p.push(site, PulseRelayRig.body("start", revision: 1)).status == 410,
                "same token registered again")
            #expect(try await p.rig.apns.requests().count == 1)
            #expect(try !p.rig.relayLog.text.contains(site.pushKey))
        }
    }

    /// Each bad input gets its documented code and nothing reaches APNs.
    @Test func badInputNeverReachesAPNs() async throws {
        try await Self.with { p in
            let phone = try await p.register()
            let site = try await p.mint(phone)
            let other = try await p.mint(phone, name: "Other")
            try await p.activity(phone, site, ref: "order-1024")
            let good = PulseRelayRig.body(revision: 10)
            let now = Int64(Date().timeIntervalSince1970)
            func expect(_ r: RawResponse, _ status: Int, _ code: String, _ what: Comment) {
                #expect(r.status == status, what)
                #expect(PulseRelayRig.json(r)["code"]?.stringValue == code, what)
                if status == 400 { #expect(PulseRelayRig.json(r)["error"]?.stringValue != nil, what) }
            }
            expect(
                try await p.push(site, good, key: Base64.urlEncode(SecureRandom.bytes(32))), 401, "bad_signature",
                "forged")
            expect(try await p.push(site, good, signedPath: "/v1/devices/x/push"), 401, "bad_signature", "wrong path")
            expect(try await p.push(site, good, signedBody: Array("{}".utf8)), 401, "bad_signature", "wrong body hash")
            expect(try await p.push(site, good, seconds: now - 3600), 401, "stale", "old timestamp")
            expect(try await p.push(site, good, seconds: now + 3600), 401, "stale", "future timestamp")
            expect(try await p.push(site, good, key: other.pushKey), 401, "bad_signature", "another site's key")
            var unknown = site
            unknown.deviceId = "0000"
            expect(try await p.push(unknown, good), 401, "unauthorized", "unknown device")
            var unknownSource = site
            unknownSource.sourceId = "s_nope"
            expect(try await p.push(unknownSource, good), 401, "unauthorized", "unknown source")
            let raw = try await RawHTTP.request(
                port: p.port, "POST", "/v1/devices/\(site.deviceId)/push", json: good.canonicalString)
            expect(raw, 401, "unauthorized", "no X-Pulse-Auth")
            let progress = PulseRelayRig.body(revision: 11, state: ["template": "progress", "progress": 1.5])
            expect(try await p.push(site, progress), 400, "invalid_request", "progress out of range")
            let steps = PulseRelayRig.body(
                revision: 11, state: ["template": "steps", "step": 1, "steps": .array(Array(repeating: "s", count: 9))])
            expect(try await p.push(site, steps), 400, "invalid_request", "nine steps")
            let longAlert = PulseRelayRig.body(revision: 11, alert: String(repeating: "字", count: 61))
            expect(try await p.push(site, longAlert), 400, "invalid_request", "alert over 60")
            let huge = PulseRelayRig.body(revision: 11, state: ["title": .string(String(repeating: "x", count: 9000))])
            expect(try await p.push(site, huge), 400, "too_large", "oversized body")
            expect(try await p.push(site, .null, rawBody: Array("not json".utf8)), 400, "invalid_json", "not JSON")

            let rid = UUID().uuidString.lowercased()
            #expect(try await p.push(site, good, requestId: rid).status == 200)
            expect(
                try await p.push(site, PulseRelayRig.body(revision: 12), requestId: rid), 409, "replayed",
                "replayed requestId")
            try await p.rig.apns.reset()
            #expect(try await p.rig.apns.requests().isEmpty)
            #expect(
                try await p.call(
                    "DELETE", "/v1/pulse/devices/\(phone.deviceId)/sites/\(site.sourceId)", credential: phone.credential
                ).status == 200)
            expect(try await p.push(site, PulseRelayRig.body(revision: 13)), 403, "revoked", "revoked key")
            #expect(try await p.rig.apns.requests().isEmpty, "nothing refused reached APNs")
        }
    }

    /// APNs' answers: a dead activity token ends the activity (404 now and next), a dead
    /// push-to-start token retires the phone (410), a transient answer is 429/503 and leaves the
    /// revision unused.
    @Test func apnsAnswersBecomeTheGuidesCodes() async throws {
        try await Self.with(extra: "update-interval: 0s") { p in
            let phone = try await p.register()
            let site = try await p.mint(phone)
            try await p.activity(phone, site, ref: "a")
            try await p.rig.apnsAnswers(429, "TooManyRequests", headers: ["retry-after": "7"])
            let throttled = try await p.push(site, PulseRelayRig.body(ref: "a", revision: 1))
            #expect(throttled.status == 429)
            #expect(throttled.headers["retry-after"] == "7")
            try await p.rig.apnsAnswers(503, "ServiceUnavailable")
            #expect(try await p.push(site, PulseRelayRig.body(ref: "a", revision: 1)).status == 503)
            try await p.rig.apnsAnswers(200)
            #expect(
                try await p.push(site, PulseRelayRig.body(ref: "a", revision: 1)).status == 200,
                "the revision was not used up")
            try await p.rig.apnsAnswers(410, "Unregistered")
            #expect(try await p.push(site, PulseRelayRig.body(ref: "a", revision: 2)).status == 404)
            try await p.rig.apns.reset()
            #expect(try await p.push(site, PulseRelayRig.body(ref: "a", revision: 3)).status == 404)
            #expect(try await p.rig.apns.requests().isEmpty)
            try await p.rig.apnsAnswers(400, "BadDeviceToken")
            #expect(try await p.push(site, PulseRelayRig.body("start", ref: "b", revision: 1)).status == 410)
            #expect(try await p.push(site, PulseRelayRig.body("start", ref: "c", revision: 1)).status == 410)
        }
    }
}
