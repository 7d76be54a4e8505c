import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import RelayChannel

/// The Pulse channel against the rules of the Pulse Relay site integration guide
/// (`shared/seeds/004_6ba746c86ae51669.txt`, sections 三, 四 and 五): every expected body below is the
/// guide's own example, compared as JSON after parsing.
@Suite("Relay protocol pulse: the integration guide")
struct PulseGuideTests {
    typealias T = PulseRelayTests

    /// A fresh v4 UUID in lower case, as `crypto.randomUUID()`, `uuid.uuid4()` and the guide's
    /// `uuidgen | tr A-Z a-z` make it (三: "requestId 每次新生成一个 UUID").
    static let requestIdPattern = "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"

    func deliver(_ setup: RelaySetup, _ la: [String: JSONValue], title: String? = nil, body: String? = nil) async throws
        -> DeliveryResult?
    {
        let n = HeraldNotification(title: title, body: body, liveActivity: la)
        return await setup.channel.deliver(DeliveryRequest(notification: n, targets: [RelayTest.target(T.device())]))
            .first
    }

    func bodies(_ setup: RelaySetup) throws -> [JSONValue] {
        try setup.http.requests.map { try JSONValue.parse($0.body) }
    }

    /// 三: the request example, passed by the hub as its liveActivity, goes out as written:
    /// `revision` inside `contentState`, nothing at the top level but the guide's fields.
    @Test func requestExampleIsSentAsWritten() async throws {
        let example: [String: JSONValue] = [
            "ref": "order-1024", "event": "update", "timestamp": 1_793_000_000,
            "contentState": [
                "title": "订单 #1024", "summary": "骑手已取餐", "status": "running", "revision": 1_793_000_000_123,
            ],
            "alert": ["body": "骑手已取餐"],
        ]
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{\"ok\":true}")])
        let r = try await deliver(setup, example)
        #expect(r?.outcome == .delivered)
        #expect(r?.details["revision"] == "1793000000123")
        let requests = setup.http.requests
        try #require(requests.count == 1)
        #expect(try JSONValue.parse(requests[0].body) == .object(example))
        // The signature checks independently over the exact bytes, and the script reads the
        // revision from contentState.
        let auth = try #require(requests[0].header("x-pulse-auth"))
        let out = try APNsTestSupport.python(
            "relay_pulse_check.py", [Base64.urlEncode(T.key), requests[0].path, auth, Base64.encode(requests[0].body)])
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == "1793000000123")
    }

    /// The contract's own example notification (design/contract.md §4), parsed as a hub sends it,
    /// reaches the relay as the guide's body.
    @Test func contractExampleWorksEndToEnd() async throws {
        // The contract's §4 example, shared with the end-to-end test in RouterTests.
        let text = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../Vectors/contract-example-notification.json"), encoding: .utf8)
        let n = try HeraldNotification(jsonText: text)
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{\"ok\":true}")])
        let r = await setup.channel.deliver(DeliveryRequest(notification: n, targets: [RelayTest.target(T.device())]))
        #expect(r.first?.outcome == .delivered)
        let expected: JSONValue = [
            "ref": "order-1024", "event": "update", "timestamp": .number(Double(setup.clock.now().secondsSince1970)),
            "contentState": [
                "title": "Order #1024", "summary": "Picked up", "status": "running", "revision": 1_793_000_000_123,
            ],
            "alert": ["body": "Picked up"],
        ]
        #expect(try bodies(setup) == [expected])
    }

    /// 四: the four templates' examples, and the examples of 五 (Node: steps; Python: progress), are
    /// accepted and sent unchanged.
    @Test func templateExamplesAreSentUnchanged() async throws {
        let examples: [JSONValue] = [
            ["title": "导出报表", "summary": "正在生成 PDF", "status": "running", "revision": 1_793_000_000_123],
            [
                "template": "progress", "progress": 0.42, "endsAt": 1_793_000_300, "title": "上传 4 个文件",
                "summary": "已传 1.2 GB", "status": "running", "revision": 1_793_000_000_123,
            ],
            [
                "template": "steps", "step": 3, "steps": ["已下单", "备餐中", "配送中", "已送达"], "title": "订单 #1024",
                "summary": "骑手已取餐", "status": "running", "revision": 1_793_000_000_123,
            ],
            [
                "template": "countdown", "startsAt": 1_793_000_000, "endsAt": 1_793_000_900, "title": "产品评审会",
                "summary": "3 号会议室", "status": "waiting", "revision": 1_793_000_000_123,
            ],
            ["title": "测试", "summary": "", "status": "running", "revision": 1_767_225_600_000],
        ]
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{\"ok\":true}")])
        for (i, state) in examples.enumerated() {
            let r = try await deliver(setup, ["ref": .string("t\(i)"), "event": "update", "contentState": state])
            #expect(r?.outcome == .delivered, "\(r?.reason ?? "")")
        }
        let sent = try bodies(setup)
        try #require(sent.count == examples.count)
        for (i, state) in examples.enumerated() {
            #expect(sent[i]["contentState"] == state)
            #expect(sent[i]["revision"] == nil)
        }
    }

    /// 四: all templates need title, summary (may be empty), status and revision: a hub that leaves
    /// the summary out still sends one; the revision is added inside contentState.
    @Test func everyBodyCarriesTheFourFields() async throws {
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{\"ok\":true}")])
        let r = try await deliver(
            setup, ["ref": "r", "event": "update", "contentState": ["title": "T", "status": "done"]])
        #expect(r?.outcome == .delivered)
        let state = try #require(try bodies(setup).first?["contentState"])
        #expect(state["title"] == "T")
        #expect(state["summary"] == "")
        #expect(state["status"] == "done")
        #expect(state["revision"] == .number(Double(setup.clock.now().millisecondsSince1970)))
    }

    /// `liveActivity.revision` is kept as an alias of `contentState.revision` and sent inside
    /// contentState; two different revisions are refused before sending.
    @Test func revisionAlias() async throws {
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{\"ok\":true}")])
        let ok = try await deliver(
            setup,
            [
                "ref": "r", "event": "update", "revision": 1_793_000_000_500,
                "contentState": ["title": "T", "status": "running"],
            ])
        #expect(ok?.outcome == .delivered)
        let sent = try #require(try bodies(setup).first)
        #expect(sent["revision"] == nil)
        #expect(sent["contentState"]?["revision"] == 1_793_000_000_500)
        setup.clock.advance(by: .seconds(2))
        let both = try await deliver(
            setup,
            [
                "ref": "r", "event": "update", "revision": 1_793_000_000_600,
                "contentState": ["title": "T", "status": "running", "revision": 1_793_000_000_700],
            ])
        #expect(both?.outcome == .failed)
        #expect(both?.reason?.contains("revision") == true)
        #expect(setup.http.requests.count == 1)
    }

    /// 三: `alert` has only `body` (≤ 60), its title is always the site name; `dismissalDate` is for
    /// `end` only. 四: a template's fields only with that template; `site`, `agent`, `approvalId` are
    /// the relay's (ignored), so they are not sent.
    @Test func fieldRules() throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        func make(_ la: [String: JSONValue], body: String? = nil) throws -> PulseLiveActivity {
            try PulseLiveActivity(HeraldNotification(title: "Title", body: body, liveActivity: la), now: now)
        }
        func reason(_ la: [String: JSONValue]) -> String? {
            do {
                _ = try make(la)
                return nil
            } catch let error as PulseLiveActivity.Invalid { return error.reason } catch { return "\(error)" }
        }
        let state: JSONValue = ["title": "T", "summary": "s", "status": "running"]
        // alert: body only
        let titled = try make([
            "ref": "r", "event": "update", "contentState": state, "alert": ["title": "X", "body": "B"],
        ])
        #expect(titled.alert == ["body": "B"])
        let start = try make(["ref": "r", "event": "start", "contentState": state], body: "Build started")
        #expect(start.alert == ["body": "Build started"])
        #expect(try make(["ref": "r", "event": "start", "contentState": state]).alert == ["body": "s"])
        // dismissalDate: end only
        #expect(
            reason(["ref": "r", "event": "update", "contentState": state, "dismissalDate": 1_767_230_000])?.contains(
                "end") == true)
        let end = try make(["ref": "r", "event": "end", "contentState": state, "dismissalDate": 1_767_230_000])
        #expect(end.fields["dismissalDate"] == 1_767_230_000)
        // template fields belong to their template
        #expect(
            reason([
                "ref": "r", "event": "update", "contentState": ["title": "T", "status": "running", "progress": 0.5],
            ])?
            .contains("template status") == true)
        #expect(
            reason([
                "ref": "r", "event": "update",
                "contentState": [
                    "template": "countdown", "title": "T", "status": "running", "endsAt": 1_793_000_900, "step": 1,
                ],
            ])?.contains("template countdown") == true)
        #expect(
            reason([
                "ref": "r", "event": "update",
                "contentState": [
                    "template": "progress", "title": "T", "status": "running", "progress": 0.1,
                    "endsAt": 1_793_000_900_000,
                ],
            ])?.contains("endsAt") == true)
        // the relay's own fields are not sent
        let relayFields = try make([
            "ref": "r", "event": "update",
            "contentState": [
                "title": "T", "summary": "s", "status": "running", "site": "x", "agent": "a", "approvalId": "p",
            ],
        ])
        #expect(relayFields.fields["contentState"] == state)
        #expect(
            reason(["ref": "r", "event": "update", "contentState": ["title": "T", "status": "running", "sumary": "x"]])
                != nil)
    }

    /// 三, status table: 404 means the phone has no activity for the ref: an update is re-sent as a
    /// start, an end is not (nothing is left to end), and neither is retried.
    @Test func notFound() async throws {
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route("/v1/devices/", [.json(404, "{\"error\":\"no activity\"}")])
        let end = try await deliver(
            setup, ["ref": "gone", "event": "end", "contentState": ["title": "T", "status": "done"]])
        #expect(end?.outcome == .failed)
        #expect(end?.status == 404)
        #expect(try bodies(setup).map { $0["event"] } == ["end"])
        // update → start → 404 again: failed, not retried
        let update = try await deliver(
            setup, ["ref": "u", "event": "update", "contentState": ["title": "T", "status": "done"]])
        #expect(update?.outcome == .failed)
        #expect(try bodies(setup).map { $0["event"] } == ["end", "update", "start"])
    }

    /// 三, 频率: over its alert limit the relay drops the alert, still sends, and answers
    /// `"alertDropped": true`; Herald reports it.
    @Test func relayReportsAlertDropped() async throws {
        let setup = try RelaySetup.make(T.yaml())
        setup.http.route(
            "/v1/devices/", [.json(200, "{\"ok\":true,\"alertDropped\":true}"), .json(200, "{\"ok\":true}")])
        let dropped = try await deliver(
            setup,
            [
                "ref": "r", "event": "update", "contentState": ["title": "T", "status": "done"],
                "alert": ["body": "Done"],
            ])
        #expect(dropped?.outcome == .delivered)
        #expect(dropped?.details["alertDropped"] == "true")
        setup.clock.advance(by: .seconds(60))
        let kept = try await deliver(
            setup,
            [
                "ref": "r", "event": "update", "contentState": ["title": "T", "status": "done"],
                "alert": ["body": "Done"],
            ])
        #expect(kept?.details["alertDropped"] == "false")
    }

    /// 三: `X-Pulse-Auth: v2 <seconds> <requestId> <sig>` with a new lower-case UUID per request
    /// (a resend after 404 too), and the current unix seconds.
    @Test func requestIdIsAFreshLowerCaseUUID() async throws {
        let setup = try RelaySetup.make(T.yaml(), random: SystemRandom())
        setup.http.route("/v1/devices/", [.json(404, "{\"error\":\"no activity\"}"), .json(200, "{}")])
        let r = try await deliver(
            setup, ["ref": "r", "event": "update", "contentState": ["title": "T", "status": "done"]])
        #expect(r?.outcome == .delivered)
        let requests = setup.http.requests
        try #require(requests.count == 2)
        var ids: [String] = []
        for request in requests {
            let parts = try #require(request.header("x-pulse-auth")).split(separator: " ").map(String.init)
            try #require(parts.count == 4)
            #expect(parts[0] == "v2")
            #expect(parts[1] == String(setup.clock.now().secondsSince1970))
            #expect(APNsTestSupport.matches(parts[2], Self.requestIdPattern), "requestId \(parts[2])")
            ids.append(parts[2])
        }
        #expect(ids[0] != ids[1])
    }
}
