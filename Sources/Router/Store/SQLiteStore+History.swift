import ChannelAPI
import Foundation
import HeraldSQLite

/// Lifecycle events, history and purge, badges and cooldowns on SQLite.
extension SQLiteStore {
    // MARK: Lifecycle and history

    /// See ``HeraldStore``.
    public func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent {
        try checkWritable("record an event")
        return try db.transaction { c in try SQLiteStore.insertEvent(event, c) }
    }

    /// Stores one lifecycle event and its event-log entry on `c` (inside the caller's transaction).
    static func insertEvent(_ event: LifecycleEvent, _ c: SQLiteConnection) throws -> LifecycleEvent {
        guard let namespace = try c.queryOne(StoreSQL.namespace(of: event.notificationId))?.string("namespace")
        else {
            throw StoreError.unknownNotification(event.notificationId)
        }
        try c.run(StoreSQL.insertEvent(event))
        var stored = event
        stored.id = c.lastInsertRowID
        try SQLiteStore.appendEvent(
            c, namespace: namespace, kind: event.kind.rawValue, notificationId: event.notificationId,
            data: EventLogData.lifecycle(stored), at: SQLiteStore.ms(event.at))
        return stored
    }

    /// See ``HeraldStore``.
    public func events(notificationId: String) throws -> [LifecycleEvent] {
        try db.query(StoreSQL.events(notificationId: notificationId)).map {
            try $0.lifecycleEvent(notificationId: notificationId)
        }
    }

    /// See ``HeraldStore``.
    public func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry] {
        let sql: SQL = StoreSQL.historyIDs(namespace: namespace, id: id, limit: limit, tiebreak: "rowid")
        return try historyEntries(ids: db.query(sql).compactMap { $0.string("id") })
    }

    /// See ``HeraldStore``: by keyset on (created_at, rowid), the order of the namespace index.
    public func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]? {
        guard let anchor = try db.queryOne(StoreSQL.historyAnchor(namespace: namespace, id: before, tiebreak: "rowid")),
            let at = anchor.int("created_at"), let k = anchor.int("k")
        else { return nil }
        let ids = try db.query(
            StoreSQL.historyIDs(namespace: namespace, after: (at, k), limit: limit, tiebreak: "rowid"))
        return try historyEntries(ids: ids.compactMap { $0.string("id") })
    }

    /// See ``HeraldStore``.
    public func purge(before date: Date) throws -> Int {
        try checkWritable("purge old history")
        return try db.transaction { c in
            try c.run(
                """
                DELETE FROM event_log WHERE notification_id IN (
                  SELECT id FROM notifications WHERE created_at < \(SQLiteStore.ms(date)) AND NOT EXISTS (
                    SELECT 1 FROM deliveries d WHERE d.notification_id = notifications.id
                      AND d.state IN ('pending', 'retry')))
                """)
            try c.run(StoreSQL.purgeNotifications(before: SQLiteStore.ms(date)))
            return c.changes
        }
    }

    // MARK: Channel state, badges, cooldowns

    /// See ``HeraldStore``.
    public func channelState(_ channel: String) -> any ChannelStateStore {
        SQLiteChannelState(store: self, channel: channel)
    }

    /// See ``HeraldStore``.
    public func addBadgeTag(namespace: String, tag: String, now: Date) throws {
        try checkWritable("update the badge count")
        try db.run(StoreSQL.addBadgeTag(namespace: namespace, tag: tag, at: SQLiteStore.ms(now)))
    }

    /// See ``HeraldStore``.
    public func pendingTagCount(namespace: String) throws -> Int {
        Int(try db.queryOne(StoreSQL.pendingTagCount(namespace: namespace))?.int("n") ?? 0)
    }

    /// See ``HeraldStore``.
    public func clearBadge(namespace: String) throws {
        try checkWritable("clear the badge count")
        try db.run(StoreSQL.clearBadge(namespace: namespace))
    }

    /// See ``HeraldStore``.
    public func touchCooldowns(namespace: String, tag: String, keys: [(key: String, window: Duration)], now: Date)
        throws
        -> Set<String>
    {
        try checkWritable("update cooldowns")
        return try db.transaction { c in
            var hits: Set<String> = []
            for (key, window) in keys {
                let row = try c.queryOne(StoreSQL.cooldown(namespace: namespace, key: key, tag: tag))
                if let at = row.flatMap({ $0.date("at") }), now.timeIntervalSince(at) < window.timeInterval {
                    hits.insert(key)
                } else {
                    try c.run(
                        """
                        INSERT OR REPLACE INTO cooldowns(namespace, step_key, tag, at)
                        VALUES(\(namespace), \(key), \(tag), \(SQLiteStore.ms(now)))
                        """)
                }
            }
            return hits
        }
    }
}
