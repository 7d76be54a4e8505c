import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import RelayChannel

@Suite("Relay protocol pulse")
struct PulseRelayTests {
    static let key = Array(UInt8(100)...UInt8(131))
    static let legacy = "https://legacy.example"

    static func yaml() -> String {
        "type: relay\nprotocol: pulse\nallowed-relays: [\"{URL}\", \"\(legacy)\"]\ncurrent-relay: \"{URL}\""
    }

    /// Issue 31 item 5: a push never goes to a relay outside `allowed-relays`.
    @Test func currentRelayComesFromAllowedRelaysOrIsRefused() async throws {
        // allowed-relays alone: pushes go to its first entry, not to the built-in default.
        let alone = try RelaySetup.make(
            "type: relay\nprotocol: pulse\nallowed-relays: [\"{URL}\", \"\(Self.legacy)\"]")
        alone.http.route("/v1/devices/", [.json(200, "{}")])
        #expect(await deliver(alone, Self.activity("start"))?.outcome == .delivered)
        let sent = try #require(alone.http.requests.first)
        #expect(sent.url.hasPrefix(RelaySetup.baseURL + "/v1/devices/"), "\(sent.url)")
        #expect(!alone.http.requests.contains { $0.url.contains("crsyounen") })
        // Both set and disagreeing: a config error at current-relay, naming the list.
        let disagree = try RelayTest.configError(
            "type: relay\nprotocol: pulse\nallowed-relays: [\"https://mine.example\"]\ncurrent-relay: \"https://relay.crsyounen.com\""
        )
        #expect(
            disagree?.contains("current-relay https://relay.crsyounen.com is not in allowed-relays") == true,
            "\(disagree ?? "")")
        let empty = try RelayTest.configError("type: relay\nprotocol: pulse\nallowed-relays: []")
        #expect(empty?.contains("at least one") == true, "\(empty ?? "")")
        // The same relay written differently (case, a trailing slash) agrees.
        #expect(
            try RelayTest.configError(
                "type: relay\nprotocol: pulse\nallowed-relays: [\"https://Mine.example/\"]\ncurrent-relay: \"https://mine.example\""
            )
                == nil)
    }

    static func device(_ id: String = "p1", relay: String = legacy) -> Device {
        Device(
            deviceId: id, platform: "pulse",
            fields: [
                "relay": .string(relay), "relayDeviceId": .string("dev-\(id)"), "sourceId": "src-1",
                "pushKey": .string(Base64.urlEncode(key)), "deviceName": "Phone",
            ])
    }

    static func activity(
        _ event: String, ref: String = "build-1", alert: JSONValue? = nil, state: JSONValue? = nil
    ) -> HeraldNotification {
        var la: [String: JSONValue] = [
            "ref": .string(ref), "event": .string(event),
            "contentState": state ?? ["title": "Build", "status": "running", "summary": "compiling"],
        ]
        if let alert { la["alert"] = alert }
        return HeraldNotification(title: "Build", body: "Build started", liveActivity: la)
    }

    /// `contentState.revision` of a sent body (the guide, 三 and 四: revision is a contentState field).
    static func sentRevision(_ body: [UInt8]) throws -> Int {
        let o = try RelayTest.object(body)
        #expect(o["revision"] == nil, "revision at the top level of the body")
        return try #require(o["contentState"]?["revision"]?.intValue)
    }

    func deliver(_ setup: RelaySetup, _ n: HeraldNotification, _ d: Device = device()) async -> DeliveryResult? {
        await setup.channel.deliver(DeliveryRequest(notification: n, targets: [RelayTest.target(d)])).first
    }

    @Test func authVectorAndCanonicalString() {
        let body = Array("{\"a\":1}".utf8)
        let c = PulseAuth.canonical(path: "/v1/devices/d/push", seconds: 1_700_000_000, requestId: "rid", body: body)
        // sha256hex of the body, from Python's hashlib.
        let bodyHash = "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
        #expect(c == "POST\n/v1/devices/d/push\n1700000000\nrid\n\(bodyHash)")
        let header = PulseAuth.header(
            key: Self.key, path: "/v1/devices/d/push", seconds: 1_700_000_000, requestId: "rid", body: body)
        #expect(header.hasPrefix("v2 1700000000 rid "))
        let expected = Base64.urlEncode(HMACSHA256.authenticationCode(key: Self.key, message: Array(c.utf8)))
        #expect(header.hasSuffix(" " + expected))
    }

    @Test func sendsToCurrentRelaySignedAndRevisionIncreases() async throws {
        let setup = try RelaySetup.make(Self.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{}")])
        #expect(await deliver(setup, Self.activity("start"))?.outcome == .delivered)
        setup.clock.advance(by: .seconds(2))
        let r2 = await deliver(setup, Self.activity("update"))
        #expect(r2?.outcome == .delivered)
        #expect(r2?.details["alertDropped"] == "false")
        let requests = setup.http.requests
        try #require(requests.count == 2)
        var revisions: [Int] = []
        for r in requests {
            #expect(r.path == "/v1/devices/dev-p1/push")
            #expect(r.header("x-pulse-source") == "src-1")
            let auth = try #require(r.header("x-pulse-auth"))
            let out = try APNsTestSupport.python(
                "relay_pulse_check.py", [Base64.urlEncode(Self.key), r.path, auth, Base64.encode(r.body)])
            revisions.append(Int(out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1)
        }
        #expect(revisions[0] >= 1_767_225_600_000)
        #expect(revisions[1] > revisions[0])
        let start = try RelayTest.object(requests[0].body)
        #expect(start["event"] == "start")
        #expect(start["alert"]?["body"] == "Build started")
        #expect(!setup.sink.text.contains(Base64.urlEncode(Self.key)))
    }

    @Test func revisionStaysMonotonicWhenTheClockGoesBack() async throws {
        let state = InMemoryChannelState()
        let setup = try RelaySetup.make(Self.yaml(), state: state)
        setup.http.route("/v1/devices/", [.json(200, "{}")])
        _ = await deliver(setup, Self.activity("end"))
        setup.clock.advance(by: .seconds(-60))
        _ = await deliver(setup, Self.activity("end"))
        let revs = try setup.http.requests.map { try Self.sentRevision($0.body) }
        try #require(revs.count == 2)
        #expect(revs[1] == revs[0] + 1)
    }

    @Test func validation() throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        func reason(_ la: [String: JSONValue]) -> String? {
            do {
                _ = try PulseLiveActivity(HeraldNotification(title: "t", liveActivity: la), now: now)
                return nil
            } catch { return error.reason }
        }
        let ok: JSONValue = ["title": "T", "status": "running"]
        #expect(reason(["ref": "a.b_c-1", "event": "update", "contentState": ok]) == nil)
        #expect(reason(["ref": "bad ref", "event": "update", "contentState": ok])?.contains("ref") == true)
        #expect(
            reason(["ref": .string(String(repeating: "r", count: 65)), "event": "update", "contentState": ok]) != nil)
        #expect(reason(["ref": "r", "event": "pause", "contentState": ok]) != nil)
        let long61: JSONValue = .string(String(repeating: "x", count: 61))
        #expect(reason(["ref": "r", "event": "update", "contentState": ["title": long61, "status": "done"]]) != nil)
        #expect(
            reason([
                "ref": "r", "event": "update",
                "contentState": [
                    "title": "T", "status": "done", "summary": .string(String(repeating: "s", count: 121)),
                ],
            ]) != nil)
        #expect(reason(["ref": "r", "event": "update", "contentState": ["title": "T", "status": "sleeping"]]) != nil)
        #expect(
            reason(["ref": "r", "event": "update", "contentState": ok, "alert": ["body": long61]])?.contains("60")
                == true)
        let progress = { (p: JSONValue) -> [String: JSONValue] in
            [
                "ref": "r", "event": "update",
                "contentState": ["title": "T", "status": "running", "template": "progress", "progress": p],
            ]
        }
        #expect(reason(progress(0.5)) == nil)
        #expect(reason(progress(1.5)) != nil)
        let steps = { (extra: [String: JSONValue]) -> [String: JSONValue] in
            var s: [String: JSONValue] = ["title": "T", "status": "running", "template": "steps"]
            s.merge(extra) { $1 }
            return ["ref": "r", "event": "update", "contentState": .object(s)]
        }
        #expect(reason(steps(["step": 2, "steps": ["a", "b"]])) == nil)
        #expect(reason(steps(["step": 1, "stepCount": 8])) == nil)
        #expect(reason(steps(["step": 0, "stepCount": 3])) != nil)
        #expect(reason(steps(["step": 1, "stepCount": 9])) != nil)
        #expect(reason(steps(["step": 1, "steps": .array(Array(repeating: "a", count: 9))])) != nil)
        #expect(reason(steps(["step": 1, "steps": ["seventeen-chars!!"]])) != nil)
        let countdown: [String: JSONValue] = [
            "ref": "r", "event": "update",
            "contentState": ["title": "T", "status": "running", "template": "countdown"],
        ]
        #expect(reason(countdown)?.contains("endsAt") == true)
        #expect(
            reason([
                "ref": "r", "event": "update", "contentState": ["title": "T", "status": "running", "template": "x"],
            ]) != nil)
        // start always carries an alert (taken from the notification when absent)
        let start = try PulseLiveActivity(
            HeraldNotification(
                title: "t", body: "b", liveActivity: ["ref": "r", "event": "start", "contentState": ok]),
            now: now)
        #expect(start.alert == ["body": "b"])
    }

    @Test func invalidActivityFailsBeforeSending() async throws {
        let setup = try RelaySetup.make(Self.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{}")])
        let r = await deliver(setup, Self.activity("update", ref: "no spaces"))
        #expect(r?.outcome == .failed)
        let none = await deliver(setup, HeraldNotification(title: "plain"))
        #expect(none?.outcome == .failed)
        #expect(setup.http.requests.isEmpty)
    }

    @Test func registrationChecksRelayAllowList() async throws {
        let setup = try RelaySetup.make(Self.yaml())
        #expect(try await setup.channel.validateRegistration(Self.device()) == Self.device())
        await #expect(throws: ValidationError.self) {
            try await setup.channel.validateRegistration(Self.device(relay: "https://evil.example"))
        }
        var badKey = Self.device()
        badKey.fields["pushKey"] = "AAAA"
        await #expect(throws: ValidationError.self) { try await setup.channel.validateRegistration(badKey) }
        let ios = RelayTest.ios("i", token: "abcd")
        #expect(try await setup.channel.validateRegistration(ios) == ios)
        let defaults = try RelayTest.configError("type: relay\nprotocol: pulse")
        #expect(defaults == nil)
    }

    @Test func limitsHoldAndAlertIsDropped() async throws {
        let setup = try RelaySetup.make(Self.yaml())
        setup.http.route("/v1/devices/", [.json(200, "{}")])
        let alert: JSONValue = ["body": "heads up"]
        #expect(await deliver(setup, Self.activity("update", alert: alert))?.details["alertDropped"] == "false")
        // a second update within 1 s → retry after the window
        let fast = await deliver(setup, Self.activity("update", alert: alert))
        #expect(fast?.outcome == .retry)
        #expect(fast?.retryAfter == .seconds(1))
        setup.clock.advance(by: .seconds(2))
        let dropped = await deliver(setup, Self.activity("update", alert: alert))
        #expect(dropped?.outcome == .delivered)
        #expect(dropped?.details["alertDropped"] == "true")
        let last = try setup.http.requests.last.map { try RelayTest.object($0.body) }
        #expect(last?["alert"] == nil)
        // starts: one per ref per 30 s, four per hour
        #expect(await deliver(setup, Self.activity("start", ref: "s1"))?.outcome == .delivered)
        #expect(await deliver(setup, Self.activity("start", ref: "s1"))?.outcome == .retry)
        for ref in ["s2", "s3", "s4"] {
            #expect(await deliver(setup, Self.activity("start", ref: ref))?.outcome == .delivered)
        }
        let fifth = await deliver(setup, Self.activity("start", ref: "s5"))
        #expect(fifth?.outcome == .retry)
        #expect((fifth?.retryAfter ?? Duration.zero) > Duration.seconds(3000))
    }

    @Test func hourlyBudget() {
        var doc: JSONValue?
        for i in 0..<600 {
            let (d, decision) = PulseLimits.reserve(
                doc, event: "end", ref: "r\(i)", hasAlert: false, now: 1_000_000 + Int64(i))
            #expect(decision == .send(dropAlert: false))
            doc = d
        }
        let (_, over) = PulseLimits.reserve(doc, event: "end", ref: "x", hasAlert: false, now: 1_000_700)
        #expect(over == .wait(.milliseconds(3_600_000 - 700)))
    }

    @Test(arguments: [
        (200, DeliveryOutcome.delivered), (401, .dead), (403, .dead), (410, .dead), (429, .retry), (500, .retry),
        (503, .retry), (400, .failed),
    ])
    func answers(status: Int, expected: DeliveryOutcome) async throws {
        let setup = try RelaySetup.make(Self.yaml())
        setup.http.route(
            "/v1/devices/", [.json(status, "{\"error\":\"why-\(status)\"}", headers: ["retry-after": "5"])])
        let r = await deliver(setup, Self.activity("update"))
        #expect(r?.outcome == expected)
        if expected == .retry { #expect(r?.retryAfter == .seconds(5)) }
        if status == 400 { #expect(r?.reason?.contains("why-400") == true) }
    }

    @Test func notFoundSendsAStart() async throws {
        let setup = try RelaySetup.make(Self.yaml())
        setup.http.route("/v1/devices/", [.json(404, "{\"error\":\"no activity\"}"), .json(200, "{}")])
        let r = await deliver(setup, Self.activity("update"))
        #expect(r?.outcome == .delivered)
        let bodies = try setup.http.requests.map { try RelayTest.object($0.body) }
        #expect(bodies.map { $0["event"]?.stringValue } == ["update", "start"])
        #expect(bodies.last?["alert"] != nil)
    }

    @Test func conflictRaisesRevisionOnce() async throws {
        let setup = try RelaySetup.make(Self.yaml())
        setup.http.route("/v1/devices/", [.json(409, "{\"error\":\"stale revision\"}")])
        let r = await deliver(setup, Self.activity("end"))
        #expect(r?.outcome == .retry)
        let revs = try setup.http.requests.map { try Self.sentRevision($0.body) }
        try #require(revs.count == 2)
        #expect(revs[1] > revs[0])
    }
}
