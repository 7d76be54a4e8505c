import ChannelAPI
import Foundation
import HeraldPostgres

/// Lifecycle events, history and purge, badges, cooldowns and the event log on PostgreSQL.
extension PostgresStore {
    // MARK: Lifecycle and history

    /// See ``HeraldStore``.
    public func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent {
        try call { try db.transaction { c in try Self.insertEvent(event, c) } }
    }

    /// Stores one lifecycle event and its event-log entry on `c` (inside the caller's transaction).
    static func insertEvent(_ event: LifecycleEvent, _ c: PostgresConnection) throws -> LifecycleEvent {
        guard let n = try c.queryOne(StoreSQL.namespace(of: event.notificationId))
        else { throw StoreError.unknownNotification(event.notificationId) }
        let row = try c.queryOne("\(StoreSQL.insertEvent(event)) RETURNING id")
        var stored = event
        stored.id = row?.int("id") ?? 0
        try Self.appendEvents(
            [(n.string("namespace") ?? "", event.kind.rawValue, event.notificationId, EventLogData.lifecycle(stored))],
            at: Self.ms(event.at), c)
        return stored
    }

    /// See ``HeraldStore``.
    public func events(notificationId: String) throws -> [LifecycleEvent] {
        try call {
            try db.query(StoreSQL.events(notificationId: notificationId)).map {
                try $0.lifecycleEvent(notificationId: notificationId)
            }
        }
    }

    /// See ``HeraldStore``.
    public func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry] {
        let sql: PostgresSQL = StoreSQL.historyIDs(namespace: namespace, id: id, limit: max(0, limit), tiebreak: "ord")
        return try historyEntries(ids: call { try db.query(sql).compactMap { $0.string("id") } })
    }

    /// See ``HeraldStore``: by keyset on (created_at, ord), the order of ``history(namespace:id:limit:)``.
    public func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]? {
        let ids: [String]? = try call {
            guard
                let anchor = try db.queryOne(StoreSQL.historyAnchor(namespace: namespace, id: before, tiebreak: "ord")),
                let at = anchor.int("created_at"), let k = anchor.int("k")
            else { return nil }
            return try db.query(
                StoreSQL.historyIDs(namespace: namespace, after: (at, k), limit: limit, tiebreak: "ord")
            )
            .compactMap { $0.string("id") }
        }
        return try ids.map(historyEntries(ids:))
    }

    /// See ``HeraldStore``: deliveries, attempts, events and event-log entries go with their notification.
    public func purge(before date: Date) throws -> Int {
        try call {
            try db.run(StoreSQL.purgeNotifications(before: Self.ms(date)))
        }
    }

    // MARK: Channel state, badges, cooldowns

    /// See ``HeraldStore``.
    public func channelState(_ channel: String) -> any ChannelStateStore {
        PostgresChannelState(db: db, channel: channel, clock: clock)
    }

    /// See ``HeraldStore``.
    public func addBadgeTag(namespace: String, tag: String, now: Date) throws {
        _ = try call {
            try db.run(StoreSQL.addBadgeTag(namespace: namespace, tag: tag, at: Self.ms(now)))
        }
    }

    /// See ``HeraldStore``.
    public func pendingTagCount(namespace: String) throws -> Int {
        try call {
            Int(try db.queryOne(StoreSQL.pendingTagCount(namespace: namespace))?.int("n") ?? 0)
        }
    }

    /// See ``HeraldStore``.
    public func clearBadge(namespace: String) throws {
        try call { _ = try db.run(StoreSQL.clearBadge(namespace: namespace)) }
    }

    /// See ``HeraldStore``: atomic across processes (each key's row is locked while it is decided).
    public func touchCooldowns(namespace: String, tag: String, keys: [(key: String, window: Duration)], now: Date)
        throws -> Set<String>
    {
        try call {
            try db.transaction { c in
                var hits: Set<String> = []
                for (key, window) in keys {
                    try c.run(
                        """
                        INSERT INTO cooldowns(namespace, step_key, tag, at) VALUES(\(namespace), \(key), \(tag), \(Int64.min))
                        ON CONFLICT DO NOTHING
                        """)
                    let row = try c.queryOne(
                        "\(StoreSQL.cooldown(namespace: namespace, key: key, tag: tag)) FOR UPDATE")
                    if let raw = row?.int("at"), raw != Int64.min,
                        now.timeIntervalSince(Date(timeIntervalSince1970: Double(raw) / 1000)) < window.timeInterval
                    {
                        hits.insert(key)
                    } else {
                        try c.run(
                            """
                            UPDATE cooldowns SET at = \(Self.ms(now))
                            WHERE namespace = \(namespace) AND step_key = \(key) AND tag = \(tag)
                            """)
                    }
                }
                return hits
            }
        }
    }

    // MARK: Event log

    /// See ``HeraldStore``.
    public func eventLog(after: Int64, namespaces: [String]?, limit: Int) throws -> [EventLogEntry] {
        try call {
            var sql: PostgresSQL = "SELECT * FROM event_log WHERE sequence > \(after)"
            if let namespaces { sql.append(" AND namespace = ANY(\(textArray: namespaces)::text[])") }
            sql.append(" ORDER BY sequence LIMIT \(max(0, limit))")
            return try db.query(sql).map { try $0.eventLogEntry() }
        }
    }

    /// See ``HeraldStore``.
    public func lastEventSequence() throws -> Int64 {
        try call { try db.queryOne(PostgresSQL(stringLiteral: StoreSQL.lastEventSequence))?.int("s") ?? 0 }
    }
}
