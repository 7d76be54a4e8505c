import ChannelAPI
import Foundation
import HeraldServer
import HeraldSync
import Router
import Testing

@testable import HeraldMHD

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
        let text = String(decoding: await Self.body(of: response), as: UTF8.self)
        return (response.status, text, try? JSONValue.parse(text))
    }

    /// The body of an answer; a streamed report is read once its writer has finished it (a small
    /// report fits the stream's buffer). An event stream is finished first (its writer never ends).
    static func body(of response: ServerResponse, finishing: Bool = false) async -> [UInt8] {
        guard case .stream(let stream) = response.body else { return response.bodyBytes }
        if finishing { stream.finish() }
        let deadline = ContinuousClock.now + .seconds(120)
        while !stream.isFinished, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        var bytes: [UInt8] = []
        var buffer = [CChar](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBufferPointer { stream.read(into: $0.baseAddress!, max: $0.count) }
            guard n > 0 else { break }
            bytes += buffer[..<n].map { UInt8(bitPattern: $0) }
        }
        return bytes
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

    /// The race of the issue made deterministic: the other namespace's notification is stored right
    /// after the API's first read found the id free, before the router reads it again. The send is
    /// stored as this namespace's own (ids are unique per namespace), never answered with theirs.
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
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.json?["namespace"] == "default")
        #expect(answer.json?["id"] == "deploy-42")
        #expect(answer.json?["replayed"] == nil)
        #expect(!answer.text.contains("theirs"))
        await router.shutdown()
    }

    /// Issue 30 item 3: ids are unique per namespace. Two tenants send the same id: each gets its own
    /// notification, answered as a new id is, and reads, confirms and replays only its own.
    @Test(arguments: [false, true]) func theSameIdInTwoNamespacesIsTwoNotifications(waitNone: Bool) async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        let query = waitNone ? ["wait": "none"] : [:]
        let status = waitNone ? 202 : 200
        let first = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.admin, query: query,
            json: #"{"id":"deploy-42","namespace":"default","title":"admin's"}"#)
        #expect(first.status == status)
        let second = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.other, query: query,
            json: #"{"id":"deploy-42","namespace":"other","title":"other's"}"#)
        // Exactly what a new id gets: the same status, the caller's id and namespace, no replay.
        #expect(second.status == status, "\(second.text)")
        #expect(second.json?["id"] == "deploy-42")
        #expect(second.json?["namespace"] == "other")
        #expect(second.json?["replayed"] == nil)
        #expect(!second.text.contains("admin"))
        // Each reads its own.
        let mine = await Self.request(api, "GET", "/v1/notifications/deploy-42", token: ServerHarness.other)
        #expect(mine.json?["title"] == "other's")
        #expect(mine.json?["id"] == "deploy-42")
        let theirs = await Self.request(api, "GET", "/v1/notifications/deploy-42", token: ServerHarness.admin)
        #expect(theirs.json?["title"] == "admin's")
        // A retry replays its own, in either namespace.
        let again = await Self.request(
            api, "POST", "/v1/notifications", token: ServerHarness.other, query: query,
            json: #"{"id":"deploy-42","namespace":"other","title":"other's"}"#)
        #expect(again.status == status)
        #expect(again.json?["namespace"] == "other")
        if !waitNone { #expect(again.json?["replayed"] == true) }
        // Events land on the caller's own notification.
        let tapped = await Self.request(
            api, "POST", "/v1/notifications/deploy-42/events", token: ServerHarness.other, json: #"{"kind":"tapped"}"#)
        #expect(tapped.status == 201)
        let afterTap = await Self.request(api, "GET", "/v1/notifications/deploy-42", token: ServerHarness.admin)
        #expect(afterTap.json?["events"] == [])
        let otherHistory = await Self.request(
            api, "GET", "/v1/notifications", token: ServerHarness.other, query: ["namespace": "other"])
        let newest = otherHistory.json?["notifications"]?.arrayValue?.first
        #expect(newest?["id"] == "deploy-42")
        #expect(newest?["events"]?.arrayValue?.count == 1)
        // The event log names the client's id in both namespaces.
        let log = try router.store.eventLog(after: 0, namespaces: nil, limit: 100)
        #expect(
            log.filter { $0.kind == "notification" }.map { $0.data["notificationId"] } == ["deploy-42", "deploy-42"])
        await router.shutdown()
    }

    @Test func aTokenCoveringBothNamespacesChoosesOneByName() async throws {
        let (api, router) = try await HeraldAPIUnitTests.api()
        for ns in ["default", "team-a"] {
            let sent = await Self.request(
                api, "POST", "/v1/notifications", token: ServerHarness.admin,
                json: "{\"id\":\"n1\",\"namespace\":\"\(ns)\",\"title\":\"in \(ns)\"}")
            #expect(sent.status == 200)
            #expect(sent.json?["replayed"] == nil)
        }
        let ambiguous = await Self.request(api, "GET", "/v1/notifications/n1", token: ServerHarness.admin)
        #expect(ambiguous.status == 400)
        #expect(ambiguous.text.contains("namespace"))
        let chosen = await Self.request(
            api, "GET", "/v1/notifications/n1", token: ServerHarness.admin, query: ["namespace": "team-a"])
        #expect(chosen.json?["title"] == "in team-a")
        // Paging by the id in its namespace.
        #expect(
            await Self.request(
                api, "GET", "/v1/notifications", token: ServerHarness.admin,
                query: ["namespace": "team-a", "before": "n1"]
            ).status == 200)
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
