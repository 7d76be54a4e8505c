import ChannelAPI
import Foundation
import HeraldServer
import Router
import Testing

/// Issue 17: every route of http-api.md §3 over real HTTP on 127.0.0.1, with its success and error
/// shapes, and the auth matrix of §2.
@Suite struct ServerAPITests {
    static func notification(_ id: String, namespace: String = "default", title: String = "hi") -> String {
        #"{"id":"\#(id)","namespace":"\#(namespace)","title":"\#(title)"}"#
    }

    @Test func healthzAndMetricsNeedNoToken() async throws {
        try await withServer { h in
            let health = try await h.request("GET", "/healthz", token: nil)
            #expect(health.status == 200)
            #expect(health.json?["status"] as? String == "ok")
            #expect(health.headers["content-type"] == "application/json")
            let metrics = try await h.request("GET", "/metrics", token: nil)
            #expect(metrics.status == 200)
            #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            #expect(metrics.text.contains("# TYPE herald_notifications_total counter"))
        }
    }

    @Test func metricsCanRequireTheMetricsScope() async throws {
        var settings = ServerHarness.defaults
        settings.metricsPublic = false
        try await withServer(settings) { (h: ServerHarness) async throws in
            #expect(try await h.request("GET", "/metrics", token: nil).status == 401)
            #expect(try await h.request("GET", "/metrics", token: ServerHarness.reader).status == 403)
            #expect(try await h.request("GET", "/metrics", token: ServerHarness.admin).status == 200)
        }
    }

    @Test func theAuthMatrix() async throws {
        try await withServer { h in
            let body = Self.notification("auth-1")
            // No token, and a wrong one: 401 with WWW-Authenticate: Bearer.
            let none = try await h.request("POST", "/v1/notifications", token: nil, json: body)
            #expect(none.status == 401)
            #expect(none.headers["www-authenticate"] == "Bearer")
            #expect(none.errorCode == "unauthorized")
            let wrong = try await h.request("POST", "/v1/notifications", token: "hrd_wrong", json: body)
            #expect(wrong.status == 401)
            #expect(wrong.headers["www-authenticate"] == "Bearer")
            // A valid token without the scope: 403.
            let reader = try await h.request("POST", "/v1/notifications", token: ServerHarness.reader, json: body)
            #expect(reader.status == 403)
            #expect(reader.errorCode == "forbidden")
            // Writing into a namespace the token does not cover: 403, and nothing is stored.
            let foreign = try await h.request(
                "POST", "/v1/notifications", token: ServerHarness.sender,
                json: Self.notification("auth-2", namespace: "ops"))
            #expect(foreign.status == 403)
            #expect(try h.router.store.notification(id: "auth-2") == nil)
            // A pattern namespace covers its prefix.
            let team = try await h.request(
                "POST", "/v1/notifications", json: Self.notification("auth-3", namespace: "team-a"))
            #expect(team.status == 200)
            // Reading an id of another namespace: 404, like an unknown id.
            #expect(try await h.request("POST", "/v1/notifications", json: body).status == 200)
            let probe = try await h.request("GET", "/v1/notifications/auth-1", token: ServerHarness.other)
            #expect(probe.status == 404)
            let unknown = try await h.request("GET", "/v1/notifications/nope", token: ServerHarness.other)
            #expect(unknown.status == 404)
            #expect(probe.body == unknown.body.map { $0 }.replacing(Array("nope".utf8), with: Array("auth-1".utf8)))
            #expect(try await h.request("GET", "/v1/notifications/auth-1", token: ServerHarness.reader).status == 200)
            // ?token= is refused outside /v1/events, accepted there.
            let query = try await h.request("GET", "/v1/notifications?token=\(ServerHarness.admin)", token: nil)
            #expect(query.status == 401)
            let stream = try await SSEClient.open(
                port: h.port, path: "/v1/events?token=\(ServerHarness.admin)", token: nil)
            #expect(stream.head.status == 200)
            #expect(stream.head.headers["content-type"] == "text/event-stream")
            stream.close()
        }
    }

    @Test func devices() async throws {
        try await withServer { h in
            let device = #"{"deviceId":"pixel","platform":"phone","token":"fcm-secret-token"}"#
            let created = try await h.request("POST", "/v1/devices", json: device)
            #expect(created.status == 200, "\(created.text)")
            let d = try #require(created.json?["device"] as? [String: Any])
            #expect(d["deviceId"] as? String == "pixel")
            #expect(d["channels"] as? [String] == ["fcm"])
            #expect(created.json?["warnings"] as? [String] == [])
            #expect(created.json?["created"] as? Bool == true)
            // Invalid registration: 422 naming the field; nothing stored.
            let bad = try await h.request("POST", "/v1/devices", json: #"{"deviceId":"x","platform":"phone"}"#)
            #expect(bad.status == 422)
            #expect((bad.json?["error"] as? [String: Any])?["field"] as? String == "token")
            #expect((bad.json?["error"] as? [String: Any])?["code"] as? String == "invalid_device")
            // A device no channel of its namespace serves is stored with a warning.
            let ios = try await h.request(
                "POST", "/v1/devices",
                json:
                    #"{"namespace":"team-x","deviceId":"w","platform":"ios","token":"abababababababababababababababababababababababababababababababab"}"#
            )
            #expect(ios.status == 200, "\(ios.text)")
            let warnings = try #require(ios.json?["warnings"] as? [String])
            #expect(warnings.count == 1 && warnings[0].contains("unreachable"))
            #expect((ios.json?["device"] as? [String: Any])?["unreachable"] is String)
            // Writing a device into another namespace: 403.
            let foreign = try await h.request(
                "POST", "/v1/devices", token: ServerHarness.other, json: device)
            #expect(foreign.status == 403)
            let list = try await h.request("GET", "/v1/devices?namespace=default")
            #expect(list.status == 200)
            let devices = try #require(list.json?["devices"] as? [[String: Any]])
            #expect(devices.map { $0["deviceId"] as? String } == ["pixel"])
            // Secrets (the token) are never echoed, neither on registration nor in the listing.
            #expect(!created.text.contains("fcm-secret-token"))
            #expect(!list.text.contains("fcm-secret-token"))
            // Listing a namespace the token does not cover: 403.
            #expect(
                try await h.request("GET", "/v1/devices?namespace=default", token: ServerHarness.other).status == 403)
            // Removal by id, then nothing left to match: 404; by token; no selector: 400.
            #expect(try await h.request("DELETE", "/v1/devices?namespace=default&deviceId=pixel").status == 204)
            #expect(try await h.request("DELETE", "/v1/devices?namespace=default&deviceId=pixel").status == 404)
            #expect(
                try await h.request(
                    "DELETE",
                    "/v1/devices?namespace=team-x&token=abababababababababababababababababababababababababababababababab"
                ).status == 204)
            let none = try await h.request("DELETE", "/v1/devices?namespace=default")
            #expect(none.status == 400)
        }
    }

    @Test func sendIsIdempotentAndReportsTheDelivery() async throws {
        try await withServer { h in
            try await h.registerPhone("p1")
            let first = try await h.request("POST", "/v1/notifications", json: Self.notification("idem-1"))
            #expect(first.status == 200, "\(first.text)")
            #expect(first.headers["herald-replayed"] == nil)
            let deliveries = try #require(first.json?["deliveries"] as? [[String: Any]])
            #expect(
                Set(deliveries.compactMap { $0["channel"] as? String }) == ["fcm", "hook"])
            #expect(deliveries.allSatisfy { $0["outcome"] as? String == "delivered" })
            let second = try await h.request("POST", "/v1/notifications", json: Self.notification("idem-1"))
            #expect(second.status == 200)
            #expect(second.headers["herald-replayed"] == "true")
            #expect(h.fcm.requests.count == 1)
            #expect((second.json?["deliveries"] as? [[String: Any]])?.count == deliveries.count)
            // wait=none: 202 once stored; the same id again is a replay.
            let queued = try await h.request(
                "POST", "/v1/notifications?wait=none", json: Self.notification("idem-2"))
            #expect(queued.status == 202)
            #expect(queued.json?["id"] as? String == "idem-2")
            #expect(queued.json?["namespace"] as? String == "default")
            #expect(queued.json?["planned"] as? Int == 2)
            #expect(try h.router.store.notification(id: "idem-2") != nil)
            let again = try await h.request(
                "POST", "/v1/notifications?wait=none", json: Self.notification("idem-2"))
            #expect(again.status == 202)
            #expect(again.headers["herald-replayed"] == "true")
            #expect(try h.router.store.deliveries(notificationId: "idem-2").count == 2)
        }
    }

    @Test func notificationsAreListedAndRead() async throws {
        try await withServer { h in
            for i in 1...3 {
                #expect(
                    try await h.request("POST", "/v1/notifications", json: Self.notification("list-\(i)")).status == 200
                )
            }
            let list = try await h.request("GET", "/v1/notifications?namespace=default&limit=2")
            #expect(list.status == 200)
            let ids = (list.json?["notifications"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(ids == ["list-3", "list-2"])
            let page = try await h.request("GET", "/v1/notifications?namespace=default&limit=2&before=list-2")
            #expect((page.json?["notifications"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["list-1"])
            let one = try await h.request("GET", "/v1/notifications/list-1")
            #expect(one.status == 200)
            #expect(one.json?["id"] as? String == "list-1")
            #expect(one.json?["deliveries"] is [[String: Any]])
            #expect(one.json?["events"] is [[String: Any]])
            #expect(try await h.request("GET", "/v1/notifications?limit=0").status == 400)
        }
    }

    @Test func errorShapes() async throws {
        try await withServer { h in
            let unknownRoute = try await h.request("GET", "/v2/nothing")
            #expect(unknownRoute.status == 404)
            #expect(unknownRoute.errorCode == "not_found")
            let wrongMethod = try await h.request("PUT", "/v1/notifications", json: "{}")
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.headers["allow"] == "GET, POST")
            let notJSONType = try await h.request(
                "POST", "/v1/notifications", headers: ["Content-Type": "text/plain"], body: Array("hi".utf8))
            #expect(notJSONType.status == 415)
            let badJSON = try await h.request("POST", "/v1/notifications", json: #"{"title": "x",}"#)
            #expect(badJSON.status == 400)
            #expect(badJSON.errorCode == "invalid_json")
            let message = (badJSON.json?["error"] as? [String: Any])?["message"] as? String
            #expect(message?.contains("at byte 14") == true, "\(message ?? "")")
            let array = try await h.request("POST", "/v1/notifications", json: "[1]")
            #expect(array.status == 400)
            let invalid = try await h.request("POST", "/v1/notifications", json: #"{"severity":"loud","title":"x"}"#)
            #expect(invalid.status == 422)
            #expect((invalid.json?["error"] as? [String: Any])?["field"] as? String == "severity")
            #expect((invalid.json?["error"] as? [String: Any])?["code"] as? String == "invalid_notification")
            // Nothing is stored for a 4xx.
            #expect(try h.router.history(limit: 10).isEmpty)
        }
    }

    @Test func lifecycleEvents() async throws {
        try await withServer { h in
            #expect(try await h.request("POST", "/v1/notifications", json: Self.notification("ev-1")).status == 200)
            let tapped = try await h.request(
                "POST", "/v1/notifications/ev-1/events", json: #"{"kind":"tapped","deviceId":"p1"}"#)
            #expect(tapped.status == 201)
            #expect((tapped.json?["event"] as? [String: Any])?["kind"] as? String == "tapped")
            let badKind = try await h.request("POST", "/v1/notifications/ev-1/events", json: #"{"kind":"poked"}"#)
            #expect(badKind.status == 422)
            #expect((badKind.json?["error"] as? [String: Any])?["field"] as? String == "kind")
            #expect((badKind.json?["error"] as? [String: Any])?["code"] as? String == "invalid_event")
            let actionless = try await h.request(
                "POST", "/v1/notifications/ev-1/events", json: #"{"kind":"tapped","action":"x"}"#)
            #expect(actionless.status == 422)
            let unknown = try await h.request("POST", "/v1/notifications/nope/events", json: #"{"kind":"tapped"}"#)
            #expect(unknown.status == 404)
            #expect(try h.router.store.events(notificationId: "ev-1").count == 1)
        }
    }

    @Test func waitForAction() async throws {
        try await withServer { h in
            #expect(try await h.request("POST", "/v1/notifications", json: Self.notification("wa-1")).status == 200)
            // Answered while waiting.
            async let waiting = h.request("GET", "/v1/notifications/wa-1/action?timeout=120")
            try await Task.sleep(for: .milliseconds(300))
            let posted = try await h.request(
                "POST", "/v1/notifications/wa-1/events", json: #"{"kind":"action","action":"approve"}"#)
            #expect(posted.status == 201)
            let answered = try await waiting
            #expect(answered.status == 200)
            #expect((answered.json?["event"] as? [String: Any])?["actionId"] as? String == "approve")
            // Answered before the wait began: 200 with the event (a wait for a new one would end in
            // the 120 s timeout's 204).
            let before = try await h.request("GET", "/v1/notifications/wa-1/action?timeout=120")
            #expect(before.status == 200)
            #expect((before.json?["event"] as? [String: Any])?["actionId"] as? String == "approve")
            // Timeout: 204.
            #expect(try await h.request("POST", "/v1/notifications", json: Self.notification("wa-2")).status == 200)
            let timedOut = try await h.request("GET", "/v1/notifications/wa-2/action?timeout=1")
            #expect(timedOut.status == 204)
            #expect(try await h.request("GET", "/v1/notifications/wa-2/action?timeout=301").status == 400)
            #expect(try await h.request("GET", "/v1/notifications/nope/action?timeout=1").status == 404)
        }
    }

    @Test func channelWebhooks() async throws {
        try await withServer { h in
            #expect(try await h.request("POST", "/v1/notifications", json: Self.notification("wh-1")).status == 200)
            let body = #"{"notificationId":"wh-1","action":"deny"}"#
            let wrong = try await h.request(
                "POST", "/v1/channels/hook/hook", token: nil, headers: ["x-hook-secret": "nope"], json: body)
            #expect(wrong.status == 401)
            #expect(try h.router.store.events(notificationId: "wh-1").isEmpty)
            let right = try await h.request(
                "POST", "/v1/channels/hook/hook", token: nil, headers: ["x-hook-secret": "s3cret"], json: body)
            #expect(right.status == 200)
            #expect(try h.router.store.events(notificationId: "wh-1").map(\.actionId) == ["deny"])
            let invalid = try await h.request(
                "POST", "/v1/channels/hook/hook", token: nil, headers: ["x-hook-secret": "s3cret"], json: "{}")
            #expect(invalid.status == 422)
            #expect(try await h.request("POST", "/v1/channels/hook/other", token: nil, json: body).status == 404)
            #expect(try await h.request("POST", "/v1/channels/fcm/hook", token: nil, json: body).status == 404)
            #expect(try await h.request("POST", "/v1/channels/none/hook", token: nil, json: body).status == 404)
        }
    }

    @Test func vapidPublicKey() async throws {
        try await withServer { h in
            let r = try await h.request("GET", "/v1/webpush/vapid-public-key")
            #expect(r.status == 200, "\(r.text)")
            let key = try #require(r.json?["publicKey"] as? String)
            let raw = try #require(Data(base64Encoded: Self.base64(key)))
            #expect(raw.count == 65 && raw.first == 0x04)
            #expect(try await h.request("GET", "/v1/webpush/vapid-public-key?channel=nope").status == 404)
            #expect(try await h.request("GET", "/v1/webpush/vapid-public-key", token: nil).status == 401)
        }
    }

    static func base64(_ url: String) -> String {
        var s = url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return s
    }
}
