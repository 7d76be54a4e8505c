import ChannelAPI
import Foundation
import HeraldMHD
import HeraldServer
import HeraldSync
import Router
import Testing

/// Issue 30: a token can neither change nor learn anything about a namespace it does not cover.
/// `admin` covers default and team-*, `other` covers only other (ServerHarness.tokens).
@Suite struct NamespaceIsolationTests {
    static func request(
        _ api: HeraldAPI, _ method: String, _ path: String, token: String, query: [String: String] = [:],
        json: String? = nil
    ) async -> (status: Int, text: String, json: JSONValue?) {
        var headers = ["authorization": "Bearer \(token)"]
        if json != nil { headers["content-type"] = "application/json" }
        let response = await api.handle(
            ServerRequest(method: method, path: path, query: query, headers: headers, body: Array((json ?? "").utf8)))
        let text = String(decoding: response.bodyBytes, as: UTF8.self)
        return (response.status, text, try? JSONValue.parse(text))
    }

    @Test func aPushTokenOfAnotherNamespaceIsNeitherMovedNorNamed() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        let victim =
            #"{"namespace":"default","deviceId":"victim-phone","platform":"phone","token":"secret-push-token"}"#
        #expect(await Self.request(api, "POST", "/v1/devices", token: ServerHarness.admin, json: victim).status == 200)
        let attack = #"{"namespace":"other","deviceId":"mine","platform":"phone","token":"secret-push-token"}"#
        let refused = await Self.request(api, "POST", "/v1/devices", token: ServerHarness.other, json: attack)
        #expect(refused.status == 409)
        #expect(refused.json?["error"]?["code"]?.stringValue == "conflict")
        #expect(!refused.text.contains("default"))
        #expect(!refused.text.contains("victim"))
        #expect(try router.devices(namespace: "default").map(\.deviceId) == ["victim-phone"])
        #expect(try router.devices(namespace: "other").isEmpty)
        // A Web Push endpoint is a secret address too.
        let sub =
            #""subscription":{"endpoint":"https://push.example.net/ep/1","keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}"#
        let web1 = "{\"namespace\":\"default\",\"deviceId\":\"browser\",\"platform\":\"web\",\(sub)}"
        let web2 = "{\"namespace\":\"other\",\"deviceId\":\"browser\",\"platform\":\"web\",\(sub)}"
        #expect(await Self.request(api, "POST", "/v1/devices", token: ServerHarness.admin, json: web1).status == 200)
        #expect(await Self.request(api, "POST", "/v1/devices", token: ServerHarness.other, json: web2).status == 409)
        #expect(try router.devices(namespace: "default").map(\.deviceId) == ["browser", "victim-phone"])
        await router.shutdown()
    }

    @Test func aTokenCoveringBothNamespacesMovesTheRegistration() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        let old = #"{"namespace":"team-a","deviceId":"old","platform":"phone","token":"T"}"#
        #expect(await Self.request(api, "POST", "/v1/devices", token: ServerHarness.admin, json: old).status == 200)
        let new = #"{"namespace":"default","deviceId":"new","platform":"phone","token":"T"}"#
        let moved = await Self.request(api, "POST", "/v1/devices", token: ServerHarness.admin, json: new)
        #expect(moved.status == 200)
        #expect(moved.json?["moved"] == ["team-a/old/phone"])
        #expect(try router.devices(namespace: "team-a").isEmpty)
        await router.shutdown()
    }

    @Test func aTelegramChatIdNeverMovesADevice() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        let mine = #"{"namespace":"default","deviceId":"me","platform":"telegram","chatId":123456789}"#
        #expect(await Self.request(api, "POST", "/v1/devices", token: ServerHarness.admin, json: mine).status == 200)
        let theirs = #"{"namespace":"other","deviceId":"them","platform":"telegram","chatId":123456789}"#
        let answer = await Self.request(api, "POST", "/v1/devices", token: ServerHarness.other, json: theirs)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.json?["moved"] == [])
        #expect(try router.devices(namespace: "default").map(\.deviceId) == ["me"])
        #expect(try router.devices(namespace: "other").map(\.deviceId) == ["them"])
        await router.shutdown()
    }

    /// The race of the issue made deterministic: the foreign notification is stored right after the
    /// API's own check read the id as free, before the router reads it again.
    @Test func aReplayOfAnotherNamespacesNotificationIsNeverAnswered() async throws {
        let held = Locked<HeldStore?>(nil)
        let (api, router) = try await HeraldAPIUnitTests.api { path in
            let s = try HeldStore(path: path)
            held.withLock { $0 = s }
            return s
        }
        let store = try #require(held.withLock { $0 })
        store.afterNextNotificationRead.withLock {
            $0 = { base in
                try base.insertNotification(
                    HeraldNotification(id: "deploy-42", namespace: "other", title: "theirs"), steps: [],
                    deliveries: [], now: Date())
            }
        }
        let answer = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.admin,
            json: #"{"id":"deploy-42","namespace":"default","title":"mine"}"#)
        #expect(answer.status == 409, "\(answer.text)")
        #expect(answer.json?["namespace"] == nil)
        #expect(answer.json?["deliveries"] == nil)
        #expect(!answer.text.contains("theirs"))
        await router.shutdown()
    }

    @Test func idsThatCannotBeAddressedAreRefused() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        for id in ["a/b", "a\\u0000b", "line\\nbreak", "tab\\there", "del\\u007f"] {
            let answer = await Self.request(
                api, "POST", "/v1/notifications", token: ServerHarness.admin, json: "{\"id\":\"\(id)\",\"title\":\"t\"}"
            )
            #expect(answer.status == 422, "\(id): \(answer.text)")
            #expect(answer.json?["error"]?["field"]?.stringValue == "id" || answer.text.contains("id"))
        }
        #expect(try router.history(limit: 10).isEmpty)
        // Every other printable id works, and is read back by its URL.
        let fine = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.admin, json: #"{"id":"deploy-42:a?b#c","title":"t"}"#
        )
        #expect(fine.status == 200)
        #expect(
            await Self.request(api, "GET", "/v1/notifications/deploy-42:a?b#c", token: ServerHarness.admin).status
                == 200)
        await router.shutdown()
    }

    @Test func dataIsCapped() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        let big = String(repeating: "x", count: HeraldNotification.maxDataBytes)
        let refused = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.admin,
            json: "{\"id\":\"big\",\"title\":\"t\",\"data\":{\"k\":\"\(big)\"}}")
        #expect(refused.status == 422)
        #expect(refused.text.contains("data"))
        let fits = String(repeating: "x", count: HeraldNotification.maxDataBytes - 1)
        let accepted = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.admin,
            json: "{\"id\":\"fits\",\"title\":\"t\",\"data\":{\"k\":\"\(fits)\"}}")
        #expect(accepted.status == 200)
        await router.shutdown()
    }

    @Test func beforePagesThroughTheHistoryByPosition() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        for i in 0..<30 {
            let id = String(format: "n%02d", i)
            #expect(
                await Self.request(
                    api, "POST", "/v1/notifications", token: ServerHarness.admin, query: ["wait": "none"],
                    json: "{\"id\":\"\(id)\",\"title\":\"t\"}"
                ).status == 202)
        }
        var seen: [String] = []
        var query = ["limit": "7"]
        while true {
            let page = await Self.request(api, "GET", "/v1/notifications", token: ServerHarness.admin, query: query)
            #expect(page.status == 200)
            let ids = (page.json?["notifications"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            seen += ids
            guard ids.count == 7, let last = ids.last else { break }
            query["before"] = last
        }
        #expect(seen.count == 30)
        #expect(Set(seen).count == 30)
        let unknown = await Self.request(
            api, "GET", "/v1/notifications", token: ServerHarness.admin, query: ["before": "nope"])
        #expect(unknown.status == 400)
        await router.shutdown()
    }

    @Test func theSummaryShowsOnlyTheCallersNamespaces() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        let phone = #"{"namespace":"default","deviceId":"p","platform":"phone","token":"t1"}"#
        #expect(await Self.request(api, "POST", "/v1/devices", token: ServerHarness.admin, json: phone).status == 200)
        let other = await Self.request(api, "GET", "/v1/summary", token: ServerHarness.other)
        #expect(other.status == 200)
        // No device, route or event of `other` yet: nothing of default shows.
        #expect(other.json?["namespaces"] == [])
        #expect(other.json?["lastOutcomes"] == [:])
        #expect(other.json?["outbox"]?["pending"]?.intValue == 0)
        let admin = await Self.request(api, "GET", "/v1/summary", token: ServerHarness.admin)
        #expect(admin.json?["namespaces"]?.arrayValue?.contains("default") == true)
        #expect(admin.json?["namespaces"]?.arrayValue?.contains("other") == false)
        await router.shutdown()
    }
}
