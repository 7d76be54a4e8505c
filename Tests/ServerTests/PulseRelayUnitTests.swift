import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

@testable import HeraldServer

/// The Pulse relay's pure parts (docs/pulse-relay.md): the signature against an independent HMAC,
/// the body rules of the guide's sections 三 and 四, and the limits with an injected clock.
@Suite struct PulseRelayUnitTests {
    static let key = Array(UInt8(7)...UInt8(38))
    static let path = "/v1/devices/8d3f0a/push"
    static let body = Array(#"{"ref":"demo","event":"update"}"#.utf8)

    /// The guide's canonical string and MAC, computed by Python's hmac in a subprocess, verify here;
    /// any change to the path, time, requestId or body does not.
    @Test func signatureMatchesPythonHMAC() throws {
        let script = """
            import base64, hashlib, hmac, sys
            key = bytes(range(7, 39)); path, seconds, rid = sys.argv[1], sys.argv[2], sys.argv[3]
            body = sys.stdin.buffer.read()
            msg = f"POST\\n{path}\\n{seconds}\\n{rid}\\n{hashlib.sha256(body).hexdigest()}".encode()
            print(base64.urlsafe_b64encode(hmac.new(key, msg, hashlib.sha256).digest()).rstrip(b"=").decode())
            """
        let r = try Subprocess.run(
            executable: "python3", arguments: ["-c", script, Self.path, "1793000000", "5f0c-rid"], stdin: Self.body)
        #expect(r.succeeded, "\(r.stderr)")
        let signature = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let request = try PulseSiteRequest.parse(source: "s_x", auth: "v2 1793000000 5f0c-rid \(signature)")
        try request.verify(key: Self.key, path: Self.path, body: Self.body)
        #expect(
            PulseSiteRequest.canonical(path: Self.path, seconds: 1_793_000_000, requestId: "5f0c-rid", body: Self.body)
                == Array(
                    "POST\n\(Self.path)\n1793000000\n5f0c-rid\n\(SHA256.hash(Self.body).map { String(format: "%02x", $0) }.joined())"
                        .utf8))
        #expect(throws: PulseRefusal.self) {
            try request.verify(key: Self.key, path: "/v1/devices/other/push", body: Self.body)
        }
        #expect(throws: PulseRefusal.self) {
            try request.verify(key: Self.key, path: Self.path, body: Self.body + [32])
        }
        var other = Self.key
        other[0] ^= 1
        #expect(throws: PulseRefusal.self) { try request.verify(key: other, path: Self.path, body: Self.body) }
        var later = request
        later.seconds += 1
        #expect(throws: PulseRefusal.self) { try later.verify(key: Self.key, path: Self.path, body: Self.body) }
    }

    @Test func headersAndSkew() throws {
        let mac = Base64.urlEncode([UInt8](repeating: 1, count: 32))
        for (source, auth) in [
            (nil, "v2 1 r \(mac)"), ("s", nil), ("s", "v1 1 r \(mac)"), ("s", "v2 x r \(mac)"), ("s", "v2 1 r"),
            ("s", "v2 1 r/x \(mac)"), ("s", "v2 1 r AAAA"), ("s p", "v2 1 r \(mac)"),
        ] as [(String?, String?)] {
            #expect(throws: PulseRefusal(401, "unauthorized", "")) {
                do throws(PulseRefusal) { _ = try PulseSiteRequest.parse(source: source, auth: auth) } catch {
                    throw PulseRefusal(error.status, error.code, "")
                }
            }
        }
        let r = try PulseSiteRequest.parse(source: "s_1", auth: "v2 1000 abc-1 \(mac)")
        try r.checkFresh(now: 1300, maxSkew: 300)
        try r.checkFresh(now: 700, maxSkew: 300)
        #expect(throws: PulseRefusal.self) { try r.checkFresh(now: 1301, maxSkew: 300) }
        #expect(throws: PulseRefusal.self) { try r.checkFresh(now: 699, maxSkew: 300) }
    }

    static func body(_ o: JSONValue) throws(PulseRefusal) -> PulseActivityBody {
        try PulseActivityBody.parse(o.canonicalBytes)
    }

    static func push(
        _ event: String = "update", ref: String = "order-1024", revision: Int = 1, state: [String: JSONValue] = [:],
        extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        var s: [String: JSONValue] = [
            "title": "订单 #1024", "summary": "骑手已取餐", "status": "running", "revision": .number(Double(revision)),
        ]
        for (k, v) in state { s[k] = v }
        var o: [String: JSONValue] = [
            "ref": .string(ref), "event": .string(event), "timestamp": 1_793_000_000, "contentState": .object(s),
        ]
        for (k, v) in extra { o[k] = v }
        return .object(o)
    }

    /// The guide's four template examples pass; `site` is dropped from what the site sent, `start`
    /// without an alert uses the title.
    @Test func guideExamplesPass() throws {
        for state in [
            [:], ["template": "progress", "progress": 0.42, "endsAt": 1_793_000_300],
            ["template": "steps", "step": 3, "steps": ["已下单", "备餐中", "配送中", "已送达"]],
            ["template": "steps", "step": 3, "stepCount": 4],
            ["template": "countdown", "startsAt": 1_793_000_000, "endsAt": 1_793_000_900],
        ] as [[String: JSONValue]] {
            _ = try Self.body(Self.push(state: state))
        }
        let b = try Self.body(
            Self.push(
                "start", state: ["site": "Evil", "agent": "x", "approvalId": "y", "summary": .null],
                extra: ["relevanceScore": 0.5, "staleDate": 1_793_000_600]))
        #expect(b.contentState == ["title": "订单 #1024", "summary": "", "status": "running", "revision": 1])
        #expect(b.alert == "订单 #1024")
        #expect(b.relevanceScore == 0.5)
        #expect(b.staleDate == 1_793_000_600)
        let end = try Self.body(Self.push("end", extra: ["dismissalDate": 1_793_000_100, "alert": ["body": "已送达"]]))
        #expect(end.dismissalDate == 1_793_000_100)
        #expect(end.alert == "已送达")
    }

    static let badBodies: [JSONValue] = [
        push(ref: ""), push(ref: String(repeating: "a", count: 65)), push(ref: "a/b"), push(ref: "订单"),
        push("stop"), push(extra: ["timestamp": .null]), push(extra: ["timestamp": 1_793_000_000_000]),
        push(extra: ["alert": ["body": .string(String(repeating: "字", count: 61))]]),
        push(extra: ["alert": ["body": ""]]), push(extra: ["alert": ["body": "x", "title": "t"]]),
        push(extra: ["dismissalDate": 1_793_000_100]), push(extra: ["relevanceScore": "high"]),
        push(extra: ["revision": 3]), push(extra: ["contentState": "x"]),
        push(state: ["title": .string(String(repeating: "t", count: 61))]),
        push(state: ["summary": .string(String(repeating: "s", count: 121))]), push(state: ["status": "paused"]),
        push(state: ["revision": -1]), push(state: ["revision": "1"]), push(state: ["template": "chart"]),
        push(state: ["template": "progress", "progress": 1.01]),
        push(state: ["template": "progress", "progress": -0.1]),
        push(state: ["template": "progress"]), push(state: ["template": "progress", "progress": 0.5, "step": 1]),
        push(state: ["template": "steps", "step": 1, "steps": .array(Array(repeating: "s", count: 9))]),
        push(state: ["template": "steps", "step": 1, "steps": [.string(String(repeating: "长", count: 17))]]),
        push(state: ["template": "steps", "step": 1, "stepCount": 9]),
        push(state: ["template": "steps", "step": 0, "stepCount": 3]),
        push(state: ["template": "steps", "step": 4, "stepCount": 3]), push(state: ["template": "steps", "step": 1]),
        push(state: ["template": "countdown"]), push(state: ["template": "countdown", "endsAt": 10, "startsAt": 11]),
        push(state: ["color": "red"]), push("start", state: ["title": ""]),
    ]

    /// Each rule of sections 三 and 四 refuses with 400.
    @Test(arguments: PulseRelayUnitTests.badBodies)
    func badBodiesAre400(_ o: JSONValue) {
        #expect(throws: PulseRefusal.self) {
            do throws(PulseRefusal) { _ = try Self.body(o) } catch {
                #expect(error.status == 400)
                throw error
            }
        }
    }

    static let limits = PulseLimits()

    static func request(_ id: String, seconds: Int64 = 1_793_000_000) -> PulseSiteRequest {
        PulseSiteRequest(sourceId: "s_1", seconds: seconds, requestId: id, signature: [])
    }

    /// Reserves `body` at `ms` with a fresh requestId; the decision.
    static func reserve(
        _ ledger: inout PulseLedger, _ o: JSONValue, at ms: Int64, id: String = UUID().uuidString
    ) throws -> PulseDecision {
        ledger.reserve(try body(o), request: request(id, seconds: ms / 1000), now: ms, limits: limits)
    }

    static func status(_ d: PulseDecision) -> Int {
        if case .refused(let r) = d { return r.status }
        return 200
    }

    /// Revision order, the replay window, no activity (404) and the wait for a starting activity.
    @Test func revisionsReplayAndActivities() throws {
        var l = PulseLedger()
        let t: Int64 = 1_793_000_000_000
        #expect(Self.status(try Self.reserve(&l, Self.push(revision: 5), at: t)) == 404)
        #expect(
            try Self.reserve(&l, Self.push("start", revision: 5), at: t)
                == .send(token: nil, dropAlert: false, previous: -1))
        #expect(Self.status(try Self.reserve(&l, Self.push("start", revision: 5), at: t + 40_000)) == 409)
        l.record(.started, ref: "order-1024", now: t)
        let starting = try Self.reserve(&l, Self.push(revision: 6), at: t + 1_000)
        #expect(
            starting
                == .refused(
                    PulseRefusal(
                        429, "activity_starting", "the activity is starting on the phone; retry shortly", retryAfter: 59
                    )))
        #expect(Self.status(try Self.reserve(&l, Self.push(revision: 6), at: t + 61_000)) == 404)
        l.report(token: "abcd", ref: "order-1024", now: t + 62_000)
        #expect(
            try Self.reserve(&l, Self.push(revision: 6), at: t + 62_000, id: "r1")
                == .send(token: "abcd", dropAlert: false, previous: 5))
        let replay = try Self.reserve(&l, Self.push(revision: 7), at: t + 64_000, id: "r1")
        #expect(Self.status(replay) == 409)
        #expect(l.refs["order-1024"]?.revision == 6, "a refused push changes no revision")
        l.record(.undo(revision: 6, previous: 5), ref: "order-1024", now: t)
        #expect(l.refs["order-1024"]?.revision == 5)
        l.report(token: nil, ref: "order-1024", now: t + 65_000)
        #expect(Self.status(try Self.reserve(&l, Self.push(revision: 8), at: t + 66_000)) == 404)
        // The ledger survives its stored form.
        #expect(PulseLedger(l.bytes) == l)
        #expect(l.hasSeen("r1"))
        // A requestId is forgotten once its time is out of the skew window.
        var p = l
        p.prune(now: t + 64_000 + 301_000, limits: Self.limits)
        #expect(!p.hasSeen("r1"))
    }

    /// 1 update per second per ref, alerts on update/end at most once per 30 s (dropped, not refused).
    @Test func updateAndAlertSpacing() throws {
        var l = PulseLedger()
        let t: Int64 = 1_793_000_000_000
        l.report(token: "aa", ref: "r", now: t)
        let alert: [String: JSONValue] = ["alert": ["body": "hi"]]
        #expect(
            try Self.reserve(&l, Self.push(ref: "r", revision: 1, extra: alert), at: t)
                == .send(token: "aa", dropAlert: false, previous: -1))
        let soon = try Self.reserve(&l, Self.push(ref: "r", revision: 2), at: t + 999)
        #expect(
            soon == .refused(PulseRefusal(429, "rate_limited", "at most one update per ref a second", retryAfter: 1)))
        #expect(
            try Self.reserve(&l, Self.push(ref: "r", revision: 2, extra: alert), at: t + 1_000)
                == .send(token: "aa", dropAlert: true, previous: 1))
        #expect(
            try Self.reserve(&l, Self.push("end", ref: "r", revision: 3, extra: alert), at: t + 1_001)
                == .send(token: "aa", dropAlert: true, previous: 2))
        #expect(
            try Self.reserve(&l, Self.push(ref: "r", revision: 4, extra: alert), at: t + 30_000)
                == .send(token: "aa", dropAlert: false, previous: 3))
    }

    /// The ledger's binary form keeps every field (negative revisions, times out of order included);
    /// a ledger stored as JSON before it is still read; damaged bytes read as an empty ledger.
    @Test func ledgerStoredForm() throws {
        let t: Int64 = 1_793_000_000_000
        var l = PulseLedger()
        l.seen = [
            PulseLedger.Seen("a", seconds: t / 1000), PulseLedger.Seen("b", seconds: t / 1000 - 7),
            PulseLedger.Seen(key: .max, seconds: 0),
        ]
        l.sends = [t, t - 5, t + 90_000]
        l.starts = [t]
        l.refs = [
            "r": PulseLedger.Activity(
                revision: -1, token: "ab12", starting: t, updated: nil, started: t - 1, alerted: 0, touched: t),
            "订单-1": PulseLedger.Activity(revision: 1 << 40, touched: t + 3),
            "odd": PulseLedger.Activity(token: "ABC", touched: t),
            "empty": PulseLedger.Activity(token: "", touched: t),
        ]
        let bytes = l.bytes
        #expect(bytes.first == 1)
        #expect(PulseLedger(bytes) == l)
        #expect(PulseLedger(bytes).refs["r"]?.storedToken == .hex([0xAB, 0x12]), "lower-case hex kept as its bytes")
        #expect(PulseLedger(bytes).refs["odd"]?.storedToken == .text("ABC"), "other text kept as it is")
        #expect(PulseLedger(bytes).refs["r"]?.token == "ab12")
        #expect(PulseStoredToken("abc") == .text("abc") && PulseStoredToken("0g") == .text("0g"))
        #expect(PulseLedger(Array(bytes.dropLast())) == PulseLedger())
        #expect(PulseLedger([1, 0xFF, 0xFF, 0xFF]) == PulseLedger())

        // The bench's shape at its end (130 requestIds and sends, 16 refs with tokens): inside one page.
        var big = PulseLedger()
        for i in 0..<130 {
            big.seen.append(PulseLedger.Seen(UUID().uuidString, seconds: t / 1000 + Int64(i / 4)))
            big.sends.append(t + Int64(i) * 300)
        }
        for i in 0..<16 {
            big.refs["ref-\(i)"] = PulseLedger.Activity(
                revision: 90, token: Hex.encode(SecureRandom.bytes(32)), updated: t + 39_000, alerted: t,
                touched: t + 39_000)
        }
        #expect(PulseLedger(big.bytes) == big)
        #expect(big.bytes.count < 2_600, "\(big.bytes.count) bytes")

        let legacy =
            #"{"refs":{"r":{"rev":4,"t":5,"tok":"aa","u":3}},"seen":{"rid-1":1793000000},"sends":[1,2],"starts":[]}"#
        let old = PulseLedger(Array(legacy.utf8))
        #expect(old.hasSeen("rid-1") && !old.hasSeen("rid-2"))
        #expect(old.sends == [1, 2])
        #expect(old.refs["r"] == PulseLedger.Activity(revision: 4, token: "aa", updated: 3, touched: 5))
    }

    /// 4 starts an hour per site and phone, one start per ref in 30 s, 600 pushes an hour.
    @Test func hourlyAndStartLimits() throws {
        var l = PulseLedger()
        let t: Int64 = 1_793_000_000_000
        for i in 0..<4 {
            #expect(
                Self.status(try Self.reserve(&l, Self.push("start", ref: "a\(i)", revision: 1), at: t + Int64(i)))
                    == 200)
        }
        #expect(Self.status(try Self.reserve(&l, Self.push("start", ref: "a0", revision: 2), at: t + 10)) == 429)
        let fifth = try Self.reserve(&l, Self.push("start", ref: "b", revision: 1), at: t + 10)
        guard case .refused(let r) = fifth else {
            Issue.record("a fifth start went through")
            return
        }
        #expect(r.status == 429 && r.retryAfter == 3600)
        #expect(Self.status(try Self.reserve(&l, Self.push("start", ref: "b", revision: 1), at: t + 3_600_000)) == 200)

        var m = PulseLedger()
        m.report(token: "aa", ref: "r", now: t)
        for i in 0..<600 {
            #expect(
                Self.status(try Self.reserve(&m, Self.push(ref: "r", revision: i + 1), at: t + Int64(i) * 1000)) == 200)
        }
        let over = try Self.reserve(&m, Self.push(ref: "r", revision: 1000), at: t + 600_000)
        guard case .refused(let o) = over else {
            Issue.record("push 601 went through")
            return
        }
        #expect(o.status == 429 && o.retryAfter == 3000)
        #expect(Self.status(try Self.reserve(&m, Self.push(ref: "r", revision: 1001), at: t + 3_600_000)) == 200)
    }

    /// A sealed pushKey opens only under its key and for its own (deviceId, sourceId).
    @Test func vaultBindsKeysToTheirRecord() throws {
        let vault = PulseKeyVault(key: Array(repeating: 9, count: 32))
        let sealed = try #require(vault.seal(Self.key, deviceId: "d1", sourceId: "s1"))
        #expect(!sealed.contains(Base64.urlEncode(Self.key)))
        #expect(vault.open(sealed, deviceId: "d1", sourceId: "s1") == Self.key)
        #expect(vault.open(sealed, deviceId: "d1", sourceId: "s2") == nil)
        #expect(PulseKeyVault(key: Array(repeating: 8, count: 32)).open(sealed, deviceId: "d1", sourceId: "s1") == nil)
    }

    /// `server.relays.pulse`: `key-file` is required and must hold 32 bytes; the limits default to
    /// the guide's and can be overridden; bad values are config errors.
    @Test func configKeys() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pulse-cfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Base64.encode(Array(repeating: 3, count: 32)).write(toFile: dir + "/k", atomically: true, encoding: .utf8)
        try "short".write(toFile: dir + "/bad", atomically: true, encoding: .utf8)
        func hub(_ keys: String) throws -> RelayHub {
            try RelayHub(server: try RelayConfigTests.server("        pulse: { channel: apns\(keys) }"))
        }
        let defaults = try hub(", key-file: \(dir)/k")
        let relay = try #require(defaults.entries.first?.relay as? PulseRelayServer)
        #expect(relay.config.limits == PulseLimits())
        #expect(relay.config.vault.key == Array(repeating: 3, count: 32))
        #expect(relay.routes.contains(RelayRoute("POST", "/v1/devices/{deviceId}/push", access: .own)))
        let tuned = try hub(
            ", key-file: \(dir)/k, pushes-per-hour: 60, starts-per-hour: 2, update-interval: 2s, start-interval: 1m,"
                + " alert-interval: 10s, start-wait: 5s, max-skew: 1m, max-body: 2048, attributes-type: Mine")
        let t = try #require(tuned.entries.first?.relay as? PulseRelayServer)
        #expect(t.config.limits.pushesPerHour == 60 && t.config.limits.startsPerHour == 2)
        #expect(t.config.limits.updateSpacing == 2_000 && t.config.limits.startSpacing == 60_000)
        #expect(t.config.limits.alertSpacing == 10_000 && t.config.limits.startWait == 5_000)
        #expect(t.config.limits.maxSkew == 60 && t.config.maxBody == 2048 && t.config.attributesType == "Mine")
        for bad in [
            "", ", key-file: \(dir)/missing", ", key-file: \(dir)/bad", ", key-file: \(dir)/k, pushes-per-hour: 0",
            ", key-file: \(dir)/k, max-skew: 2h", ", key-file: \(dir)/k, colour: red",
        ] {
            #expect(throws: ConfigError.self, "\(bad)") { _ = try hub(bad) }
        }
    }
}
