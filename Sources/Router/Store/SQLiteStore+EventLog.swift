import ChannelAPI
import Foundation
import HeraldSQLite

// The event log on SQLite (a minimal implementation so that the parameterised store suite runs
// against both stores; the `herald serve` work owns this side). Writes happen inside the
// transactions of insertNotification, suppress, record and recordEvent; SQLite has one writer at a
// time, so AUTOINCREMENT numbers are in commit order.
extension SQLiteStore {
    /// Migration 2: the event log.
    static let eventLogMigration = SQLiteMigration(
        version: 2,
        sql: """
            CREATE TABLE IF NOT EXISTS event_log(
              sequence INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, kind TEXT NOT NULL,
              notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
              data TEXT NOT NULL, created_at INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS event_log_namespace ON event_log(namespace, sequence);
            CREATE INDEX IF NOT EXISTS event_log_notification ON event_log(notification_id);
            """)

    /// Appends entries inside the caller's transaction.
    static func appendEvents(
        _ entries: [(namespace: String, kind: String, notificationId: String, data: JSONValue)], at: Int64,
        _ c: SQLiteConnection
    ) throws {
        for e in entries {
            try c.run(
                """
                INSERT INTO event_log(namespace, kind, notification_id, data, created_at)
                VALUES(\(e.namespace), \(e.kind), \(e.notificationId), \(e.data.canonicalString), \(at))
                """)
        }
    }

    /// Event-log entries for deliveries changed in the caller's transaction.
    static func deliveryEvents(
        _ ids: [(id: String, outcome: String, attempt: Int?, reason: String?)], _ c: SQLiteConnection
    )
        throws -> [(namespace: String, kind: String, notificationId: String, data: JSONValue)]
    {
        try ids.compactMap { item in
            guard
                let row = try c.queryOne(
                    """
                    SELECT d.notification_id, d.channel, d.device_id, d.attempts, n.namespace FROM deliveries d
                    JOIN notifications n ON n.id = d.notification_id WHERE d.id = \(item.id)
                    """), let nid = row.string("notification_id")
            else { return nil }
            return (
                row.string("namespace") ?? "", "delivery", nid,
                EventLogData.delivery(
                    notificationId: nid, channel: row.string("channel") ?? "", deviceId: row.string("device_id"),
                    outcome: item.outcome, attempt: item.attempt ?? Int(row.int("attempts") ?? 0), reason: item.reason)
            )
        }
    }

    /// See ``HeraldStore``.
    public func eventLog(after: Int64, namespaces: [String]?, limit: Int) throws -> [EventLogEntry] {
        var sql: SQL = "SELECT * FROM event_log WHERE sequence > \(after)"
        if let namespaces { sql.append(" AND namespace IN (\(list: namespaces))") }
        sql.append(" ORDER BY sequence LIMIT \(max(0, limit))")
        return try db.query(sql).map { row in
            guard let seq = row.int("sequence"), let ns = row.string("namespace"), let kind = row.string("kind"),
                let nid = row.string("notification_id"), let text = row.string("data"),
                let data = try? JSONValue.parse(text), let at = SQLiteStore.date(row["created_at"])
            else { throw StoreError.corrupt("event log row") }
            return EventLogEntry(
                sequence: seq, namespace: ns, kind: kind, notificationId: nid, data: data, createdAt: at)
        }
    }

    /// See ``HeraldStore``.
    public func lastEventSequence() throws -> Int64 {
        try db.query("SELECT MAX(sequence) AS s FROM event_log").first?.int("s") ?? 0
    }
}
