import ChannelAPI
import Dispatch
import Foundation
import HeraldSQLite
import Synchronization

/// The streaming send path on SQLite (issue 19): rows are written, claimed, read and reported in
/// pages, so a 100,000-device fan-out never holds all its deliveries (or devices) in memory.
extension SQLiteStore {
    /// Rows per multi-row `INSERT` and device keys read per page while expanding outbox groups.
    static let insertBatch = 256

    /// See ``HeraldStore``: one transaction. A pending group's rows are written by one
    /// `INSERT … SELECT` from the devices table (keyset order `device_id, platform`), with
    /// version-7 ids SQLite forms from a series (``UUIDGenerator/timeOrderedSeries(at:random:)``)
    /// and each device's `rowid`, so no row passes through Swift. A group suppressed at plan time reads its devices in pages of
    /// ``insertBatch``, as each row also gets its event-log entry and is handed to `suppressed`.
    public func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup], lease: OutboxLease?,
        now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> Int {
        try checkWritable("store a notification")
        let at = SQLiteStore.ms(now)
        let (written, suppressedRows) = try db.transaction { c in
            try SQLiteStore.insertItem(
                NotificationInsert(notification: notification, steps: steps, groups: groups), lease: lease, at: at,
                now: now, c)
        }
        for r in suppressedRows { suppressed(r) }
        return written
    }

    /// One notification inside the caller's transaction: its row, the delivery rows given, the rows of
    /// its outbox groups, then its `notification` event-log entry (`planned`: every row written) and
    /// one `delivery` entry per row suppressed at plan time. Returns the number of rows and the
    /// suppressed ones. An id already stored is ``StoreError/duplicateNotification(_:)``. With a
    /// `lease`, the pending rows are born leased to its owner.
    static func insertItem(
        _ item: NotificationInsert, lease: OutboxLease? = nil, at: Int64, now: Date, _ c: SQLiteConnection
    ) throws -> (rows: Int, suppressed: [DeliveryRecord]) {
        let n = item.notification
        try insertNotificationRow(n, steps: item.steps, at: at, c)
        var written = 0
        var suppressedRows: [DeliveryRecord] = []
        var batch: [DeliveryRecord] = []
        batch.reserveCapacity(insertBatch)
        func flush() throws {
            guard !batch.isEmpty else { return }
            try insertDeliveryRows(batch[...], lease: lease, at: at, c)
            suppressedRows += batch.filter { $0.state == .suppressed }
            written += batch.count
            batch.removeAll(keepingCapacity: true)
        }
        for d in item.deliveries {
            batch.append(d)
            if batch.count >= insertBatch { try flush() }
        }
        for g in item.groups {
            guard let platforms = g.platforms else {
                var ids = UUIDGenerator.makeTimeOrdered(1, at: at, random: SystemRandom()).makeIterator()
                batch += g.rows(notificationId: n.id, devices: [], now: now) {
                    ids.next() ?? UUIDGenerator.make(random: SystemRandom())
                }
                if batch.count >= insertBatch { try flush() }
                continue
            }
            guard !platforms.isEmpty else { continue }
            let list = platforms.sorted()
            if g.state == .pending {
                try flush()
                written += try insertGroupRows(
                    g, notificationId: n.id, namespace: n.namespace, platforms: list, lease: lease, at: at, c)
                continue
            }
            var after: (String, String)?
            while true {
                let cursor: SQL = after.map { "AND (device_id, platform) > (\($0.0), \($0.1))" } ?? ""
                let page = try c.query(
                    """
                    SELECT device_id, platform FROM devices
                    WHERE namespace = \(n.namespace) AND platform IN (\(list: list)) \(cursor)
                    ORDER BY device_id, platform LIMIT \(insertBatch)
                    """
                ).compactMap { row -> (deviceId: String, platform: String)? in
                    guard let id = row.string("device_id"), let p = row.string("platform") else { return nil }
                    return (id, p)
                }
                guard let last = page.last else { break }
                var ids = UUIDGenerator.makeTimeOrdered(page.count, at: at, random: SystemRandom()).makeIterator()
                batch += g.rows(notificationId: n.id, devices: page, now: now) {
                    ids.next() ?? UUIDGenerator.make(random: SystemRandom())
                }
                if batch.count >= insertBatch { try flush() }
                if page.count < insertBatch { break }
                after = (last.deviceId, last.platform)
            }
        }
        try flush()
        try appendEvent(
            c, namespace: n.namespace, kind: "notification", notificationId: n.id,
            data: EventLogData.notification(id: n.id, namespace: n.namespace, planned: written), at: at)
        // Deliveries suppressed at plan time are outcomes too.
        for d in suppressedRows {
            try appendEvent(
                c, namespace: n.namespace, kind: "delivery", notificationId: n.id,
                data: EventLogData.delivery(
                    notificationId: n.id, channel: d.channel, deviceId: d.deviceId, outcome: "suppressed",
                    attempt: 0, reason: d.reason), at: at)
        }
        return (written, suppressedRows)
    }

    /// Writes one pending row per device of `namespace` on `platforms` for group `g` with one
    /// `INSERT … SELECT`, in `(device_id, platform)` order. Row ids are members of a fresh version-7
    /// series numbered by each device's `rowid` (unique in the table, so unique in the group; a
    /// `ROW_NUMBER()` window made SQLite buffer the rows and cost a quarter of the insert). Returns
    /// how many rows it wrote.
    static func insertGroupRows(
        _ g: OutboxGroup, notificationId: String, namespace: String, platforms: [String], lease: OutboxLease?,
        at: Int64, _ c: SQLiteConnection
    ) throws -> Int {
        let leased = g.state == .pending ? lease : nil
        let series = UUIDGenerator.timeOrderedSeries(at: at, random: SystemRandom())
        try c.run(
            """
            INSERT INTO deliveries(
              id, notification_id, step, position, channel, device_id, platform, state, attempts, reason,
              lease_owner, lease_until, updated_at)
            SELECT printf('%s%012x', \(series.prefix),
                (\(series.base) + rowid) & 281474976710655),
              \(notificationId), \(g.step), \(g.position), \(g.channel), device_id, platform,
              \(g.state.rawValue), 0,
              \(g.reason), \(leased?.owner), \(leased.map { SQLiteStore.ms($0.until) }), \(at)
            FROM devices WHERE namespace = \(namespace) AND platform IN (\(list: platforms))
            ORDER BY device_id, platform
            """)
        return c.changes
    }

    /// Inserts the notification's own row inside the caller's transaction; an id already stored is
    /// ``StoreError/duplicateNotification(_:)``.
    static func insertNotificationRow(_ n: HeraldNotification, steps: [StepRule], at: Int64, _ c: SQLiteConnection)
        throws
    {
        do {
            try c.run(StoreSQL.insertNotification(n, steps: steps, at: at))
        } catch {
            if error.isConstraintViolation { throw StoreError.duplicateNotification(n.id) }
            throw error
        }
    }

    /// Inserts new delivery rows (no attempt yet) with one multi-row `INSERT` inside the caller's transaction.
    static func insertDeliveryRows(
        _ slice: ArraySlice<DeliveryRecord>, lease: OutboxLease? = nil, at: Int64, _ c: SQLiteConnection
    ) throws {
        guard !slice.isEmpty else { return }
        var insert: SQL = """
            INSERT INTO deliveries(
              id, notification_id, step, position, channel, device_id, platform, state, attempts, reason,
              lease_owner, lease_until, updated_at)
            VALUES
            """
        insert.reserveBindings(slice.count * 12)
        let until = lease.map { SQLiteStore.ms($0.until) }
        for (offset, d) in zip(0..., slice) {
            if offset > 0 { insert.appendLiteral(",") }
            let pending = d.state == .pending
            // A new row has made no attempt yet: attempts is 0.
            insert.append(
                """
                (\(d.id), \(d.notificationId), \(d.step), \(d.position), \(d.channel), \(d.deviceId), \(d.platform), \
                \(d.state.rawValue), 0, \(d.reason), \(pending ? lease?.owner : nil), \(pending ? until : nil), \(at))
                """)
        }
        try c.run(insert)
    }

    /// See ``HeraldStore``: one `GROUP BY` query.
    public func devicePlatformCounts(namespace: String?) throws -> [String: Int] {
        StoreRows.platformCounts(
            try namespace.map { try db.query(StoreSQL.platformCounts(namespace: $0)) }
                ?? db.query(SQL(stringLiteral: StoreSQL.platformCounts)))
    }

    /// See ``HeraldStore``: the plain key by the primary key, scoped ones by their partial index.
    public func notificationKeys(publicID: String) throws -> [(key: String, namespace: String)] {
        StoreRows.notificationKeys(try db.query(StoreSQL.notificationKeys(publicID: publicID)))
    }

    /// See ``HeraldStore``: one indexed probe per exact name, a range of the primary key per prefix.
    public func deviceNamespaces(covering patterns: [String]) throws -> Set<String> {
        try db.withConnection { c in
            var out: Set<String> = []
            for p in patterns {
                if p.hasSuffix("*") {
                    let prefix = String(p.dropLast())
                    // Byte order (BINARY collation): every name with the prefix sorts in this range.
                    for row in try c.query(
                        """
                        SELECT DISTINCT namespace FROM devices
                        WHERE namespace >= \(prefix) AND namespace < \(prefix + "\u{10FFFF}")
                        """)
                    {
                        if let n = row.string("namespace"), n.hasPrefix(prefix) { out.insert(n) }
                    }
                } else if try c.queryOne("SELECT 1 AS x FROM devices WHERE namespace = \(p) LIMIT 1") != nil {
                    out.insert(p)
                }
            }
            return out
        }
    }

    /// See ``HeraldStore``: the outstanding rows only, one `state =` per part so each uses its partial index.
    public func outstandingCountsByNamespace() throws -> [String: (pending: Int, retry: Int)] {
        StoreRows.outstandingByNamespace(try db.query(SQL(stringLiteral: StoreSQL.outstandingByNamespace)))
    }

    /// See ``HeraldStore``: one query for every key, the device ids bound as an `IN` list (the
    /// primary key's `(namespace, device_id)` prefix) and the platforms filtered here, in
    /// `(device_id, platform)` order.
    public func devices(namespace: String, keys: [(deviceId: String, platform: String)]) throws -> [Device] {
        guard !keys.isEmpty else { return [] }
        struct Key: Hashable {
            let deviceId: String
            let platform: String
        }
        let wanted = Set(keys.map { Key(deviceId: $0.deviceId, platform: $0.platform) })
        var devices: [Device] = []
        devices.reserveCapacity(keys.count)
        // At most 500 ids a statement: SQLite's limit on bound values is far above, and a page of
        // the executor is 125.
        var start = 0
        let ids = Array(Set(keys.map(\.deviceId))).sorted()
        while start < ids.count {
            let slice = ids[start..<min(ids.count, start + 500)]
            start += 500
            for row in try db.query(
                """
                SELECT * FROM devices WHERE namespace = \(namespace) AND device_id IN (\(list: slice))
                ORDER BY device_id, platform
                """)
            {
                guard let id = row.string("device_id"), let platform = row.string("platform"),
                    wanted.contains(Key(deviceId: id, platform: platform))
                else { continue }
                devices.append(try row.device())
            }
        }
        return devices
    }

    /// See ``HeraldStore``: one query grouped by `(step, channel)`, the order of the
    /// `deliveries_notification` index, with one count per state; grouping by the state too would sort
    /// every row of the notification in memory (4.8 MB for 100,000 deliveries).
    public func deliveryTallies(notificationId: String) throws -> [DeliveryTally] {
        let states = DeliveryState.allCases
        var sql: SQL = "SELECT step, channel, MIN(position) AS position"
        for state in states { sql.append(", SUM(state = \(state.rawValue))") }
        sql.append(" FROM deliveries WHERE notification_id = \(notificationId) GROUP BY step, channel")
        var tallies: [DeliveryTally] = []
        for row in try db.query(sql) {
            guard let step = row.int("step"), let channel = row.string("channel"), let position = row.int("position")
            else { throw StoreError.corrupt("delivery tally of \(notificationId)") }
            for (i, state) in states.enumerated() {
                // Columns: step, channel, position, then one count per state.
                guard case .integer(let n) = row[3 + i], n > 0 else { continue }
                tallies.append(
                    DeliveryTally(
                        step: Int(step), position: Int(position), channel: channel, state: state, count: Int(n)))
            }
        }
        return tallies.sorted { ($0.step, $0.position, $0.channel) < ($1.step, $1.position, $1.channel) }
    }

    /// See ``HeraldStore``: pages follow the rows' `rowid` (insertion order), so each page is an index
    /// range, and the claim rehearses recording its rows as the unpaged claim does.
    public func claimPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage {
        try checkWritable("claim deliveries")
        let limit = max(1, limit)
        return try writing("claim deliveries") {
            try db.transaction { c in
                let rows = try c.query(
                    """
                    UPDATE deliveries SET lease_owner = \(owner), lease_until = \(SQLiteStore.ms(until))
                    WHERE rowid IN (
                      SELECT rowid FROM deliveries
                      WHERE notification_id = \(notificationId) AND step = \(step) AND channel = \(channel)
                        AND rowid > \(after) AND state = 'pending'
                        AND (lease_owner IS NULL OR lease_owner = \(owner) OR lease_until < \(SQLiteStore.ms(now)))
                      ORDER BY rowid LIMIT \(limit))
                    RETURNING rowid AS page_position, *
                    """)
                let page = try SQLiteStore.page(rows, after: after, limit: limit)
                try SQLiteStore.rehearseRecord(page.records.map(\.id), until: until, now: now, c)
                return page
            }
        }
    }

    /// How long (nanoseconds of `DispatchTime`, not the injected clock: it bounds work, not behaviour)
    /// a successful rehearsal in ``leasedPending(notificationId:step:channel:owner:until:now:after:limit:)``
    /// vouches for the store: a store that goes bad is found by the first send after at most this
    /// long. A failed rehearsal vouches for nothing.
    static let rehearsalInterval: UInt64 = 100_000_000

    /// See ``HeraldStore``: one read (on the reader connection) instead of the claim's write. A page
    /// holding a row that is not leased to `owner` (or whose lease has run out) is claimed instead,
    /// as ``claimPending(notificationId:step:channel:owner:until:now:after:limit:)`` does.
    ///
    /// The claim's rehearsal of the page's record is kept, so a store that cannot record a result
    /// still fails the send before anything is sent, but in a transaction of its own, rolled back
    /// whole (in a committed one, the pages it touched, the attempts table and the retry index, go to
    /// the WAL although rolled back), and at most once per ``rehearsalInterval`` after one succeeded:
    /// on the path of every waiting send, claim and rehearsal were half of a local push's store time
    /// at 1,000 a second.
    public func leasedPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date, after: Int64,
        limit: Int
    ) throws -> ClaimPage {
        let limit = max(1, limit)
        let rows = try db.query(
            """
            SELECT rowid AS page_position, * FROM deliveries
            WHERE notification_id = \(notificationId) AND step = \(step) AND channel = \(channel)
              AND rowid > \(after) AND state = 'pending'
            ORDER BY rowid LIMIT \(limit)
            """)
        let nowMs = SQLiteStore.ms(now)
        guard rows.allSatisfy({ $0.string("lease_owner") == owner && ($0.int("lease_until") ?? 0) > nowMs }) else {
            return try claimPending(
                notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now,
                after: after, limit: limit)
        }
        let page = try SQLiteStore.page(rows, after: after, limit: limit)
        let started = DispatchTime.now().uptimeNanoseconds
        let vouched = lastRehearsal.load(ordering: .relaxed)
        if !page.records.isEmpty, vouched == 0 || started &- vouched >= SQLiteStore.rehearsalInterval {
            try writing("claim deliveries") {
                // Outside a transaction, the rehearsal is one of its own, rolled back whole.
                try db.withConnection { c in
                    try SQLiteStore.rehearseRecord(page.records.map(\.id), until: until, now: now, c)
                }
            }
            lastRehearsal.store(started, ordering: .relaxed)
        }
        return page
    }

    /// A page of delivery rows selected with `rowid AS page_position` in `rowid` order after `after`:
    /// their records, and where the next page starts (nil when fewer than `limit` came).
    static func page(_ rows: [SQLiteRow], after: Int64, limit: Int) throws -> ClaimPage {
        var last: Int64 = after
        var records: [DeliveryRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows {
            records.append(try row.delivery())
            last = max(last, row.int("page_position") ?? last)
        }
        return ClaimPage(records: records, next: records.count < limit ? nil : last)
    }

    /// See ``HeraldStore``: pages of 1,000 rows in `rowid` order, which is the order rows were inserted
    /// in (step, position, device), the order of ``deliveries(notificationId:)``. Each page is a range
    /// of the table itself (between the notification's first and last row), not a sort of its rows.
    public func forEachDelivery(notificationId: String, _ body: (DeliveryRecord) throws -> Void) throws {
        guard
            let bounds = try db.queryOne(
                "SELECT MIN(rowid) AS lo, MAX(rowid) AS hi FROM deliveries WHERE notification_id = \(notificationId)"),
            let lo = bounds.int("lo"), let hi = bounds.int("hi")
        else { return }
        var after = lo - 1
        while after < hi {
            let rows = try db.query(
                """
                SELECT rowid AS page_position, * FROM deliveries NOT INDEXED
                WHERE rowid > \(after) AND rowid <= \(hi) AND notification_id = \(notificationId)
                ORDER BY rowid LIMIT 1000
                """)
            for row in rows { try body(try row.delivery()) }
            guard rows.count == 1000, let last = rows.last?.int("page_position") else { return }
            after = last
        }
    }

    /// Applies attempt results (distinct deliveries) inside the caller's transaction with one
    /// `UPDATE … FROM` a bound `VALUES` list (per 1,000 results), one multi-row event-log `INSERT` and
    /// one multi-row attempts `INSERT` (dead devices are removed row by row): the same rows, entries
    /// and removals as recording them one by one, in the same order.
    static func recordBatch(_ attempts: [AttemptRecord], now: Date, _ c: SQLiteConnection) throws -> [Device] {
        let at = ms(now)
        var updated: [SQLiteRow] = []
        var start = 0
        while start < attempts.count {
            let slice = attempts[start..<min(attempts.count, start + 1_000)]
            start += 1_000
            var sql: SQL = "WITH j(id, state, attempt, next_at, status, reason, provider_id, details) AS (VALUES "
            sql.reserveBindings(slice.count * 8)
            for (i, a) in zip(0..., slice) {
                if i > 0 { sql.appendLiteral(",") }
                let nextAt = a.nextAttemptAt.map { ms($0) }
                let details =
                    a.details.isEmpty
                    ? nil : JSONValue.object(a.details.mapValues { .string($0) }).canonicalString
                sql.append(
                    """
                    (\(a.deliveryId), \(a.state.rawValue), \(a.attempt), \(nextAt), \(a.status), \(a.reason), \
                    \(a.providerMessageId), \(details))
                    """)
            }
            sql.append(
                """
                )
                UPDATE deliveries SET state = j.state, attempts = j.attempt, next_attempt_at = j.next_at,
                  status = j.status, reason = j.reason, provider_id = COALESCE(j.provider_id, deliveries.provider_id),
                  details = COALESCE(j.details, deliveries.details), lease_owner = NULL, lease_until = NULL,
                  updated_at = \(at)
                FROM j WHERE deliveries.id = j.id
                RETURNING deliveries.id AS id, notification_id, channel, device_id
                """)
            updated += try c.query(sql)
        }
        var found: [String: (notificationId: String, channel: String, deviceId: String?)] = [:]
        for row in updated {
            guard let id = row.string("id"), let nid = row.string("notification_id"),
                let channel = row.string("channel")
            else { continue }
            found[id] = (nid, channel, row.string("device_id"))
        }
        var namespaces: [String: String] = [:]
        var events: SQL = "INSERT INTO event_log(namespace, kind, notification_id, data, created_at) VALUES"
        var eventCount = 0
        var history: SQL = "INSERT OR REPLACE INTO attempts(delivery_id, attempt, at, outcome, status, reason) VALUES"
        history.reserveBindings(attempts.count * 6)
        for (i, a) in attempts.enumerated() {
            if i > 0 { history.appendLiteral(",") }
            history.append("(\(a.deliveryId), \(a.attempt), \(at), \(a.state.rawValue), \(a.status), \(a.reason))")
            guard let row = found[a.deliveryId],
                let ns = try namespace(of: row.notificationId, c, cache: &namespaces)
            else { continue }
            let data = EventLogData.deliveryText(
                notificationId: row.notificationId, channel: row.channel, deviceId: row.deviceId,
                outcome: a.state.reportOutcome, attempt: a.attempt, reason: a.reason)
            if eventCount > 0 { events.appendLiteral(",") }
            events.append("(\(ns), 'delivery', \(row.notificationId), \(data), \(at))")
            eventCount += 1
        }
        if eventCount > 0 { try c.run(events) }
        try c.run(history)
        var removed: [Device] = []
        for a in attempts where a.state == .dead {
            guard let r = a.removeDevice else { continue }
            let match: SQL = """
                namespace = \(r.namespace) AND device_id = \(r.deviceId) AND platform = \(r.platform)
                  AND (\(r.address) IS NULL OR address IS \(r.address))
                """
            for row in try c.query("SELECT * FROM devices WHERE \(match)") { removed.append(try row.device()) }
            try c.run("DELETE FROM devices WHERE \(match)")
        }
        return removed
    }
}
