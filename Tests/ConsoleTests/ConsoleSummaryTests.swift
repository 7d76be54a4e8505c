import ChannelAPI
import Foundation
import HeraldChannels
import HeraldConsole
import Router
import Testing

/// `GET /v1/summary`: per-channel counts of the last hour, the per-minute chart, outbox depth,
/// namespaces and devices' last outcomes, limited to the caller's namespaces.
@Suite struct ConsoleSummaryTests {
    static let yaml = """
        version: 1
        store: { path: ./herald.db }
        channels:
          audit: { type: log, path: ./audit.jsonl }
          hook: { type: log, path: ./hook.jsonl }
        routes:
          default:
            - deliver: [audit]
          namespaces:
            team-a:
              - deliver: [hook]
        """

    static func config() throws -> HeraldConfig {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-summary-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("herald.yaml").path
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        return try ConfigLoader.load(path: path, registry: HeraldChannels.registry, offline: true)
    }

    // 2026-01-01T12:00:30Z: half a minute into the current minute.
    static let now = Date(timeIntervalSince1970: 1_767_268_830)

    static func delivery(
        _ seq: Int64, _ ns: String, _ channel: String, _ outcome: String, secondsAgo: Double, device: String? = nil
    ) -> EventLogEntry {
        var data: [String: JSONValue] = [
            "notificationId": .string("n\(seq)"), "channel": .string(channel), "outcome": .string(outcome),
            "attempt": .number(1),
        ]
        if let device { data["deviceId"] = .string(device) }
        return EventLogEntry(
            sequence: seq, namespace: ns, kind: "delivery", notificationId: "n\(seq)", data: .object(data),
            createdAt: now.addingTimeInterval(-secondsAgo))
    }

    static func number(_ v: JSONValue?) -> Double? { if case .number(let n)? = v { n } else { nil } }

    @Test func countsTheLastHourPerChannelAndPerMinute() throws {
        let entries = [
            Self.delivery(1, "default", "audit", "delivered", secondsAgo: 4000),  // older than an hour
            Self.delivery(2, "default", "audit", "delivered", secondsAgo: 3500, device: "pixel"),
            Self.delivery(3, "default", "audit", "retry", secondsAgo: 100, device: "pixel"),
            Self.delivery(4, "default", "audit", "delivered", secondsAgo: 10, device: "pixel"),
            Self.delivery(5, "default", "audit", "dead", secondsAgo: 5, device: "ipad"),
            Self.delivery(6, "default", "hook", "suppressed", secondsAgo: 5),
            Self.delivery(7, "secret-ns", "audit", "delivered", secondsAgo: 5, device: "x"),  // not covered
            Self.delivery(9, "team-c", "audit", "failed", secondsAgo: 5),  // a namespace known from its traffic
            EventLogEntry(
                sequence: 8, namespace: "default", kind: "notification", notificationId: "n8",
                data: .object(["notificationId": .string("n8"), "planned": .number(1)]),
                createdAt: Self.now),
        ]
        let caller = ConsoleSummary.Caller(name: "ops", scopes: ["read"], namespaces: ["default", "team-*"])
        let summary = ConsoleSummary.build(
            caller: caller, config: try Self.config(), entries: entries, truncated: false,
            counts: [.pending: 3, .retry: 2, .delivered: 40], knownNamespaces: ["team-b", "secret-ns"], now: Self.now
        ).json
        let o = try #require(summary.objectValue)

        let channels = try #require(o["channels"]?.arrayValue).compactMap(\.objectValue)
        #expect(channels.map { $0["name"]?.stringValue } == ["audit", "hook"])
        let audit = try #require(channels[0]["lastHour"]?.objectValue)
        #expect(Self.number(audit["delivered"]) == 2)
        #expect(Self.number(audit["retry"]) == 1)
        #expect(Self.number(audit["dead"]) == 1)
        #expect(Self.number(audit["failed"]) == 1)
        #expect(Self.number(channels[1]["lastHour"]?.objectValue?["suppressed"]) == 1)
        #expect(channels[0]["type"]?.stringValue == "log")

        let outbox = try #require(o["outbox"]?.objectValue)
        #expect(Self.number(outbox["pending"]) == 3)
        #expect(Self.number(outbox["retry"]) == 2)

        // 60 minutes from 11:01 to the current 12:00; 3500 s ago (11:02:10) is in minute 1.
        let minutes = try #require(o["perMinute"]?.arrayValue).compactMap(\.objectValue)
        #expect(minutes.count == 60)
        #expect(minutes.last?["at"]?.stringValue == "2026-01-01T12:00:00Z")
        #expect(minutes.first?["at"]?.stringValue == "2026-01-01T11:01:00Z")
        #expect(Self.number(minutes[59]["delivered"]) == 1)
        #expect(Self.number(minutes[59]["dead"]) == 1)
        #expect(Self.number(minutes[57]["retry"]) == 1)  // 11:58:50 is in the 11:58 minute
        #expect(Self.number(minutes[1]["delivered"]) == 1)
        let total = minutes.reduce(0.0) { t, m in
            t + ConsoleSummary.chartOutcomes.reduce(0.0) { $0 + (Self.number(m[$1]) ?? 0) }
        }
        #expect(total == 4)  // suppressed is not charted; the old and the uncovered entries are not counted

        #expect(o["namespaces"]?.arrayValue?.compactMap(\.stringValue) == ["default", "team-a", "team-b", "team-c"])
        let last = try #require(o["lastOutcomes"]?.objectValue?["default"]?.objectValue)
        #expect(last["pixel"]?.objectValue?["outcome"]?.stringValue == "delivered")
        #expect(last["ipad"]?.objectValue?["outcome"]?.stringValue == "dead")
        #expect(o["lastOutcomes"]?.objectValue?["secret-ns"] == nil)
        #expect(o["token"]?.objectValue?["name"]?.stringValue == "ops")
        #expect(o["truncated"] == .bool(false))
    }
}
