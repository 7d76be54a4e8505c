import ChannelAPI
import Foundation
import HeraldPostgres

/// The streaming send path on PostgreSQL (issue 19): a notification's outbox groups are expanded by
/// the server, so persisting a 100,000-device fan-out neither reads the devices nor holds the rows
/// in Herald's memory.
extension PostgresStore {
    /// See ``HeraldStore``: one transaction. A pending group's rows are written by one
    /// `INSERT … SELECT` from the devices table in `(device_id, platform)` order, numbered by the
    /// server (`row_number()`) into a series of version-7 ids
    /// (``UUIDGenerator/timeOrderedSeries(at:random:)``), so no row passes through Herald. A group
    /// suppressed at plan time is written the same way and its rows come back (`RETURNING`, in
    /// device order), as each gets its event-log entry and is handed to `suppressed`; a sink group
    /// is one row. The event log (the `notification` entry with the number of rows, then one
    /// `delivery` entry per suppressed row) is the transaction's last write, and a wake-up `NOTIFY`
    /// (debounced) follows when any row is pending. A stored id is
    /// ``StoreError/duplicateNotification(_:)``.
    public func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup], lease: OutboxLease?,
        now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> Int {
        let n = notification
        let at = Self.ms(now)
        // Decided once, so a retried transaction does not take a second wake-up slot.
        var wake: Bool?
        let (written, suppressedRows) = try call {
            try db.transaction { c -> (Int, [DeliveryRecord]) in
                try insertNotificationRow(n, steps: steps, at: at, c)
                var written = 0
                var pending = 0
                var suppressedRows: [DeliveryRecord] = []
                for g in groups {
                    let rows: [DeliveryRecord]
                    let count: Int
                    if let platforms = g.platforms {
                        guard !platforms.isEmpty else { continue }
                        let statement = Self.groupInsert(
                            g, notificationId: n.id, namespace: n.namespace, platforms: platforms.sorted(),
                            lease: lease, at: at)
                        if g.state == .suppressed {
                            rows = try c.query(
                                """
                                WITH inserted AS (\(statement) RETURNING id, device_id, platform)
                                SELECT * FROM inserted ORDER BY device_id, platform
                                """
                            ).map { row in
                                guard let id = row.string("id") else { throw StoreError.corrupt("delivery row") }
                                return DeliveryRecord(
                                    id: id, notificationId: n.id, step: g.step, position: g.position,
                                    channel: g.channel, deviceId: row.string("device_id"),
                                    platform: row.string("platform"), state: g.state, reason: g.reason,
                                    updatedAt: now)
                            }
                            count = rows.count
                        } else {
                            rows = []
                            count = try c.run(statement)
                        }
                    } else {
                        // A sink: one row with no device.
                        let id = UUIDGenerator.makeTimeOrdered(1, at: at, random: SystemRandom())[0]
                        rows = g.rows(notificationId: n.id, devices: [], now: now) { id }
                        try Self.insertSinkRow(g, id: id, notificationId: n.id, lease: lease, at: at, c)
                        count = 1
                    }
                    written += count
                    if g.state == .pending { pending += count }
                    suppressedRows += rows.filter { $0.state == .suppressed }
                }
                // The notification, then the deliveries suppressed at plan time (outcomes too).
                let entries = suppressedRows.map { d in
                    (
                        namespace: n.namespace, kind: "delivery", notificationId: n.id,
                        data: EventLogData.delivery(
                            notificationId: n.id, channel: d.channel, deviceId: d.deviceId, outcome: "suppressed",
                            attempt: 0, reason: d.reason)
                    )
                }
                try Self.appendEvents(
                    [
                        (
                            n.namespace, "notification", n.id,
                            EventLogData.notification(id: n.id, namespace: n.namespace, planned: written)
                        )
                    ] + entries, at: at, c)
                if pending > 0 {
                    if wake == nil { wake = shouldNotify() }
                    if wake == true { try c.run("SELECT pg_notify(\(Self.wakeChannel), '')") }
                }
                return (written, suppressedRows)
            }
        }
        for r in suppressedRows { suppressed(r) }
        return written
    }

    /// The `INSERT … SELECT` of group `g`: one row per device of `namespace` on `platforms`, in
    /// `(device_id, platform)` order, row `k` (from 1) with id member `k` of a fresh version-7 series
    /// (``UUIDGenerator/seriesMember(prefix:base:_:)``: the prefix, then the 12 hex digits of
    /// `(base + k) mod 2^48`).
    static func groupInsert(
        _ g: OutboxGroup, notificationId: String, namespace: String, platforms: [String], lease: OutboxLease?,
        at: Int64
    ) -> PostgresSQL {
        let series = UUIDGenerator.timeOrderedSeries(at: at, random: SystemRandom())
        // Pending rows of a sender's own notification are born leased to it.
        let leased = g.state == .pending ? lease : nil
        return """
            INSERT INTO deliveries(
              id, notification_id, step, position, channel, device_id, platform, state, attempts, reason,
              lease_owner, lease_until, updated_at)
            SELECT \(series.prefix)::text || lpad(to_hex(
                (\(series.base)::bigint + row_number() OVER (ORDER BY device_id, platform)) & 281474976710655), 12, '0'),
              \(notificationId)::text, \(g.step)::int, \(g.position)::int, \(g.channel)::text, device_id, platform,
              \(g.state.rawValue)::text, 0, \(g.reason)::text, \(leased?.owner)::text,
              \(leased.map { Self.ms($0.until) })::bigint, \(at)::bigint
            FROM devices WHERE namespace = \(namespace) AND platform = ANY(\(textArray: platforms)::text[])
            ORDER BY device_id, platform
            """
    }

    /// Inserts the one row of sink group `g` (no device) inside the caller's transaction.
    static func insertSinkRow(
        _ g: OutboxGroup, id: String, notificationId: String, lease: OutboxLease?, at: Int64, _ c: PostgresConnection
    ) throws {
        let leased = g.state == .pending ? lease : nil
        try c.run(
            """
            INSERT INTO deliveries(
              id, notification_id, step, position, channel, device_id, platform, state, attempts, reason,
              lease_owner, lease_until, updated_at)
            VALUES(\(id), \(notificationId), \(g.step)::int, \(g.position)::int, \(g.channel), NULL, NULL,
              \(g.state.rawValue), 0, \(g.reason)::text, \(leased?.owner)::text,
              \(leased.map { Self.ms($0.until) })::bigint, \(at)::bigint)
            """)
    }

    /// See ``HeraldStore``: the plain key by the primary key, scoped ones by their partial index.
    public func notificationKeys(publicID: String) throws -> [(key: String, namespace: String)] {
        try call {
            StoreRows.notificationKeys(try db.query(StoreSQL.notificationKeys(publicID: publicID)))
        }
    }

    /// See ``HeraldStore``: one indexed probe per exact name, a `LIKE` on the primary key's first
    /// column per prefix (filtered here again, so the database's collation cannot widen it).
    public func deviceNamespaces(covering patterns: [String]) throws -> Set<String> {
        try call {
            var out: Set<String> = []
            for p in patterns {
                if p.hasSuffix("*") {
                    let prefix = String(p.dropLast())
                    var escaped = ""
                    for ch in prefix {
                        if ch == "%" || ch == "_" || ch == "\\" { escaped.append("\\") }
                        escaped.append(ch)
                    }
                    let like = escaped + "%"
                    for row in try db.query(
                        "SELECT DISTINCT namespace FROM devices WHERE namespace LIKE \(like) ESCAPE '\\'")
                    {
                        if let n = row.string("namespace"), n.hasPrefix(prefix) { out.insert(n) }
                    }
                } else if try !db.query("SELECT 1 AS x FROM devices WHERE namespace = \(p) LIMIT 1").isEmpty {
                    out.insert(p)
                }
            }
            return out
        }
    }

    /// See ``HeraldStore``: the outstanding rows only, one `state =` per part so each uses its partial index.
    public func outstandingCountsByNamespace() throws -> [String: (pending: Int, retry: Int)] {
        try call {
            StoreRows.outstandingByNamespace(try db.query(PostgresSQL(stringLiteral: StoreSQL.outstandingByNamespace)))
        }
    }

    /// See ``HeraldStore``: one `GROUP BY` query.
    public func devicePlatformCounts(namespace: String?) throws -> [String: Int] {
        try call {
            // Two statements rather than `$1 IS NULL OR namespace = $1`, which a prepared statement's
            // generic plan could only answer by scanning every device.
            StoreRows.platformCounts(
                try namespace.map { try db.query(StoreSQL.platformCounts(namespace: $0)) }
                    ?? db.query(PostgresSQL(stringLiteral: StoreSQL.platformCounts)))
        }
    }

    /// Rows per page of ``forEachDelivery(notificationId:_:)``.
    static let deliveryPage = 1_000

    /// See ``HeraldStore``: pages of ``deliveryPage`` rows by keyset on `(step, position, device_id,
    /// platform, id)` (a missing device or platform first, as `NULLS FIRST` in
    /// ``deliveries(notificationId:)``; the id orders rows that tie), so a report of a 100,000-device
    /// fan-out never holds more than a page. Each page is its own statement: no transaction stays
    /// open while `body` writes the report to a slow client.
    public func forEachDelivery(notificationId: String, _ body: (DeliveryRecord) throws -> Void) throws {
        var after: PostgresSQL = ""
        while true {
            let rows = try call {
                try db.query(
                    """
                    SELECT * FROM deliveries WHERE notification_id = \(notificationId) \(after)
                    ORDER BY step, position, COALESCE(device_id, ''), COALESCE(platform, ''), id
                    LIMIT \(Self.deliveryPage)
                    """
                ).map { try $0.delivery() }
            }
            for record in rows { try body(record) }
            guard rows.count == Self.deliveryPage, let last = rows.last else { return }
            after = """
                AND (step, position, COALESCE(device_id, ''), COALESCE(platform, ''), id)
                  > (\(last.step)::int, \(last.position)::int, \(last.deviceId ?? "")::text, \(last.platform ?? "")::text,
                    \(last.id)::text)
                """
        }
    }

    /// See ``HeraldStore``: one query for every key (the keys as two text arrays), in
    /// `(device_id, platform)` order; a key given twice is returned once.
    public func devices(namespace: String, keys: [(deviceId: String, platform: String)]) throws -> [Device] {
        guard !keys.isEmpty else { return [] }
        return try call {
            try db.query(
                """
                SELECT * FROM devices WHERE namespace = \(namespace) AND (device_id, platform) IN (
                  SELECT k.id, k.p FROM unnest(\(textArray: keys.map(\.deviceId))::text[],
                    \(textArray: keys.map(\.platform))::text[]) AS k(id, p))
                ORDER BY device_id, platform
                """
            ).map { try $0.device() }
        }
    }
}
