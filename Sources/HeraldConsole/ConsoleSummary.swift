import ChannelAPI
import Foundation
import Router

/// What `GET /v1/summary` answers: the console's overview in one read (docs/http-api.md,
/// "Console summary"). Built from the store's event log, the outbox counts and the config, and
/// limited to the namespaces the caller's token covers.
public struct ConsoleSummary: Sendable {
    /// The caller, as the console shows it (never the token itself).
    public struct Caller: Sendable, Equatable {
        /// The token's configured name.
        public var name: String
        /// Its scopes (`read`, `devices`, …).
        public var scopes: [String]
        /// Its namespace patterns (exact names or a trailing `*`).
        public var namespaces: [String]

        /// Creates a caller.
        public init(name: String, scopes: [String], namespaces: [String]) {
            self.name = name
            self.scopes = scopes
            self.namespaces = namespaces
        }

        /// Whether the token covers `namespace` (an exact pattern, or a prefix before a trailing `*`).
        public func covers(_ namespace: String) -> Bool {
            namespaces.contains { p in p.hasSuffix("*") ? namespace.hasPrefix(p.dropLast()) : p == namespace }
        }
    }

    /// The outcomes counted per channel.
    public static let outcomes = ["delivered", "retry", "dead", "failed", "suppressed"]
    /// The outcomes of the per-minute chart.
    public static let chartOutcomes = ["delivered", "retry", "dead"]
    /// Minutes covered.
    public static let minutes = 60
    /// At most this many event-log entries are read per summary (the newest of the hour).
    public static let maximumEntries = 50_000

    /// The JSON answer.
    public var json: JSONValue

    /// Builds the summary from already-read data. Pure: the tests call it with fixed values.
    /// - Parameters:
    ///   - caller: The token asking.
    ///   - config: The running config (channels and routes).
    ///   - entries: Event-log entries of the last hour (any namespaces; filtered here).
    ///   - truncated: True when `entries` are only the newest of the hour.
    ///   - counts: The outbox's deliveries by state.
    ///   - knownNamespaces: Namespaces with devices (filtered here, with the configured ones and
    ///     those of `entries`).
    ///   - now: The time of the answer.
    public static func build(
        caller: Caller, config: HeraldConfig, entries: [EventLogEntry], truncated: Bool,
        counts: [DeliveryState: Int], knownNamespaces: Set<String>, now: Date
    ) -> ConsoleSummary {
        let hourAgo = now.addingTimeInterval(-3600)
        let nowSeconds = now.timeIntervalSince1970
        // The 60 whole minutes ending with the current (partial) one.
        let firstMinute = (nowSeconds / 60).rounded(.down) * 60 - Double(minutes - 1) * 60
        var perChannel: [String: [String: Int]] = [:]
        var perMinute = Array(repeating: [String: Int](), count: minutes)
        var lastOutcomes: [String: [String: JSONValue]] = [:]
        var lastAt: [String: Date] = [:]
        for e in entries where e.kind == "delivery" && caller.covers(e.namespace) && e.createdAt >= hourAgo {
            guard let o = e.data.objectValue, let channel = o["channel"]?.stringValue,
                let outcome = o["outcome"]?.stringValue
            else { continue }
            perChannel[channel, default: [:]][outcome, default: 0] += 1
            let offset = (e.createdAt.timeIntervalSince1970 - firstMinute) / 60
            if offset >= 0, offset < Double(minutes), chartOutcomes.contains(outcome) {
                perMinute[Int(offset)][outcome, default: 0] += 1
            }
            if let device = o["deviceId"]?.stringValue {
                let key = e.namespace + "\u{0}" + device
                if lastAt[key].map({ $0 <= e.createdAt }) ?? true {
                    lastAt[key] = e.createdAt
                    lastOutcomes[e.namespace, default: [:]][device] = .object([
                        "outcome": .string(outcome), "channel": .string(channel),
                        "at": .string(iso(e.createdAt)),
                    ])
                }
            }
        }
        let channels: [JSONValue] = config.channels.map { c in
            let n = perChannel[c.name] ?? [:]
            return .object([
                "name": .string(c.name), "type": .string(c.type), "enabled": .bool(c.enabled),
                "lastHour": .object(
                    Dictionary(uniqueKeysWithValues: outcomes.map { ($0, JSONValue.number(Double(n[$0] ?? 0))) })),
            ])
        }
        let minuteJSON: [JSONValue] = perMinute.enumerated().map { i, m in
            var o: [String: JSONValue] = [
                "at": .string(iso(Date(timeIntervalSince1970: firstMinute + Double(i) * 60)))
            ]
            for k in chartOutcomes { o[k] = .number(Double(m[k] ?? 0)) }
            return .object(o)
        }
        var names = knownNamespaces.union(config.routes.namespaces.keys).union(entries.map(\.namespace))
        names.insert("default")
        // `default` first, then by name.
        let covered = names.filter(caller.covers)
        let visible = (covered.contains("default") ? ["default"] : []) + covered.subtracting(["default"]).sorted()
        let token: JSONValue = .object([
            "name": .string(caller.name), "scopes": .array(caller.scopes.map { .string($0) }),
            "namespaces": .array(caller.namespaces.map { .string($0) }),
        ])
        let outbox: JSONValue = .object([
            "pending": .number(Double(counts[.pending] ?? 0)), "retry": .number(Double(counts[.retry] ?? 0)),
        ])
        var o: [String: JSONValue] = [:]
        o["token"] = token
        o["namespaces"] = .array(visible.map { .string($0) })
        o["generatedAt"] = .string(iso(now))
        o["windowMinutes"] = .number(Double(minutes))
        o["channels"] = .array(channels)
        o["outbox"] = outbox
        o["perMinute"] = .array(minuteJSON)
        o["graph"] = RouteGraph.json(config, covering: caller.covers)
        o["lastOutcomes"] = .object(lastOutcomes.mapValues { .object($0) })
        o["truncated"] = .bool(truncated)
        let summary: JSONValue = .object(o)
        return ConsoleSummary(json: summary)
    }

    /// Reads what the summary needs from `router` and builds it. The event log is searched for
    /// the first entry of the last hour (a binary search over sequence numbers, a few indexed
    /// reads) and read from there, at most ``maximumEntries`` (the newest).
    public static func load(router: Router, caller: Caller, now: Date) throws -> ConsoleSummary {
        let store = router.store
        let cutoff = now.addingTimeInterval(-3600)
        let last = try store.lastEventSequence()
        // The smallest `after` whose next entry is from the last hour (or absent).
        var lo: Int64 = 0
        var hi = last
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            if let next = try store.eventLog(after: mid, namespaces: nil, limit: 1).first, next.createdAt < cutoff {
                lo = mid + 1
            } else {
                hi = mid
            }
        }
        var after = lo
        var truncated = false
        if last - after > Int64(maximumEntries) {
            after = last - Int64(maximumEntries)
            truncated = true
        }
        // Only the caller's namespaces are read: exactly, when the token names them; a token with a
        // pattern reads the hour's entries and keeps its own (build filters).
        let exact: [String]? = caller.namespaces.contains { $0.hasSuffix("*") } ? nil : caller.namespaces
        var entries: [EventLogEntry] = []
        while true {
            let page = try store.eventLog(after: after, namespaces: exact, limit: 1000)
            entries.append(contentsOf: page)
            guard let end = page.last, page.count == 1000, entries.count < maximumEntries else { break }
            after = end.sequence
        }
        let namespaces = try store.deviceNamespaces(covering: caller.namespaces)
        var counts: [DeliveryState: Int] = [:]
        for (ns, c) in try store.outstandingCountsByNamespace() where caller.covers(ns) {
            counts[.pending, default: 0] += c.pending
            counts[.retry, default: 0] += c.retry
        }
        var summary = build(
            caller: caller, config: router.config, entries: entries, truncated: truncated, counts: counts,
            knownNamespaces: namespaces, now: now)
        var o = summary.json.objectValue ?? [:]
        o["connected"] = connected(router.localStreams.connections, covering: caller.covers)
        summary.json = .object(o)
        return summary
    }

    /// The devices holding a local-push stream to this process now, per namespace the caller
    /// covers: `{"ns": [{"deviceId", "streams", "since"}]}`.
    static func connected(_ connections: [LocalStreamHub.Connection], covering: (String) -> Bool) -> JSONValue {
        var out: [String: [JSONValue]] = [:]
        for c in connections where covering(c.device.namespace) {
            out[c.device.namespace, default: []].append([
                "deviceId": .string(c.device.deviceId), "streams": .number(Double(c.streams)),
                "since": .string(iso(c.since)),
            ])
        }
        return .object(out.mapValues { .array($0) })
    }

    static func iso(_ date: Date) -> String { ISO8601Time.string(date) }
}
