import ChannelAPI
import Foundation
import HeraldSQLite

/// The outbox on SQLite: notifications, their deliveries, claims, results and leases, and the event log.
extension SQLiteStore {
    // MARK: Notifications and outbox

    /// See ``HeraldStore``.
    public func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord], now: Date
    ) throws {
        try checkWritable("store a notification")
        _ = try db.transaction { c in
            try SQLiteStore.insertItem(
                NotificationInsert(notification: notification, steps: steps, deliveries: deliveries),
                at: SQLiteStore.ms(now), now: now, c)
        }
    }

    // MARK: Event log

    /// Appends one event-log entry inside the caller's transaction.
    static func appendEvent(
        _ c: SQLiteConnection, namespace: String, kind: String, notificationId: String, data: JSONValue, at: Int64
    ) throws {
        try c.run(
            """
            INSERT INTO event_log(namespace, kind, notification_id, data, created_at)
            VALUES(\(namespace), \(kind), \(notificationId), \(data.canonicalString), \(at))
            """)
    }

    /// Appends the `delivery` entry of a row an update returned (`notification_id, channel,
    /// device_id`) inside the caller's transaction; `namespaces` caches namespaces for the call.
    static func appendDeliveryEvent(
        of row: SQLiteRow, outcome: String, attempt: Int, reason: String?, at: Int64, _ c: SQLiteConnection,
        namespaces: inout [String: String]
    ) throws {
        guard let nid = row.string("notification_id"), let channel = row.string("channel"),
            let ns = try namespace(of: nid, c, cache: &namespaces)
        else { return }
        try appendEvent(
            c, namespace: ns, kind: "delivery", notificationId: nid,
            data: EventLogData.delivery(
                notificationId: nid, channel: channel, deviceId: row.string("device_id"), outcome: outcome,
                attempt: attempt, reason: reason), at: at)
    }

    /// The namespace of a notification, read inside a transaction (cached per call in `cache`).
    static func namespace(
        of notificationId: String, _ c: SQLiteConnection, cache: inout [String: String]
    ) throws -> String? {
        if let ns = cache[notificationId] { return ns }
        let ns = try c.queryOne(StoreSQL.namespace(of: notificationId))?.string("namespace")
        if let ns { cache[notificationId] = ns }
        return ns
    }

    /// See ``HeraldStore``.
    public func eventLog(after: Int64, namespaces: [String]?, limit: Int) throws -> [EventLogEntry] {
        let limit = max(0, limit)
        let rows: [SQLiteRow]
        if let namespaces {
            guard !namespaces.isEmpty else { return [] }
            rows = try db.query(
                """
                SELECT * FROM event_log WHERE sequence > \(after) AND namespace IN (\(list: namespaces))
                ORDER BY sequence LIMIT \(limit)
                """)
        } else {
            rows = try db.query("SELECT * FROM event_log WHERE sequence > \(after) ORDER BY sequence LIMIT \(limit)")
        }
        return try rows.map { try $0.eventLogEntry() }
    }

    /// See ``HeraldStore``.
    public func lastEventSequence() throws -> Int64 {
        try db.queryOne(SQL(stringLiteral: StoreSQL.lastEventSequence))?.int("s") ?? 0
    }

    /// See ``HeraldStore``.
    public func notification(id: String) throws -> StoredNotification? {
        try db.queryOne(StoreSQL.notification(id: id))?.storedNotification(id: id)
    }

    /// See ``HeraldStore``.
    public func deliveries(notificationId: String) throws -> [DeliveryRecord] {
        try db.query(
            "SELECT * FROM deliveries WHERE notification_id = \(notificationId) ORDER BY step, position, device_id, platform"
        ).map { try $0.delivery() }
    }

    /// See ``HeraldStore``.
    public func claimPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date
    ) throws -> [DeliveryRecord] {
        try checkWritable("claim deliveries")
        return try writing("claim deliveries") {
            try db.transaction { c in
                let claimed = try c.query(
                    """
                    UPDATE deliveries SET lease_owner = \(owner), lease_until = \(SQLiteStore.ms(until))
                    WHERE notification_id = \(notificationId) AND step = \(step) AND channel = \(channel)
                      AND state = 'pending'
                      AND (lease_owner IS NULL OR lease_owner = \(owner) OR lease_until < \(SQLiteStore.ms(now)))
                    RETURNING *
                    """
                ).map { try $0.delivery() }
                try SQLiteStore.rehearseRecord(claimed.map(\.id), until: until, now: now, c)
                return claimed
            }
        }
    }

    /// See ``HeraldStore``.
    public func claimDue(owner: String, until: Date, now: Date, limit: Int) throws -> [DeliveryRecord] {
        try checkWritable("claim due retries")
        return try writing("claim due retries") {
            try db.transaction { c in
                let at = SQLiteStore.ms(now)
                let claimed = try c.query(
                    """
                    UPDATE deliveries SET lease_owner = \(owner), lease_until = \(SQLiteStore.ms(until))
                    WHERE id IN (
                      SELECT id FROM deliveries WHERE state = 'retry' AND next_attempt_at <= \(at)
                        AND (lease_owner IS NULL OR lease_owner = \(owner) OR lease_until < \(at))
                      ORDER BY next_attempt_at LIMIT \(limit))
                    RETURNING *
                    """
                ).map { try $0.delivery() }
                try SQLiteStore.rehearseRecord(claimed.map(\.id), until: until, now: now, c)
                return claimed
            }
        }
    }

    /// Inside a claim's transaction, makes the writes that recording the claimed rows' results will
    /// make (their rows, the retry index, the attempts table) and rolls them back, so a store that
    /// could not record a result fails the claim and nothing is sent that cannot be recorded.
    static func rehearseRecord(_ ids: [String], until: Date, now: Date, _ c: SQLiteConnection) throws {
        guard !ids.isEmpty else { return }
        let list = JSONValue.array(ids.map { .string($0) }).canonicalString
        // A savepoint inside the claim's transaction, always rolled back.
        try c.transaction(.rollBack) { c in
            try c.run(
                """
                UPDATE deliveries SET state = CASE state WHEN 'retry' THEN 'failed' ELSE 'retry' END,
                  attempts = attempts + 1, next_attempt_at = \(ms(until)), updated_at = \(ms(now))
                WHERE id IN (SELECT value FROM json_each(\(list)))
                """)
            try c.run(
                """
                INSERT OR REPLACE INTO attempts(delivery_id, attempt, at, outcome, status, reason)
                SELECT id, attempts, \(ms(now)), 'rehearsal', NULL, NULL FROM deliveries
                WHERE id IN (SELECT value FROM json_each(\(list)))
                """)
        }
    }

    /// Runs a write the outbox depends on; an SQLite failure becomes ``StoreError/writeFailed(operation:detail:)``
    /// naming this store's file.
    func writing<T>(_ operation: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw StoreError.writeFailed(
                operation: operation,
                detail: "\(path): \(error) (check it with: sqlite3 \(path) 'PRAGMA integrity_check')")
        }
    }

    /// See ``HeraldStore``.
    public func suppress(deliveryIds: [String], reason: String, now: Date) throws {
        guard !deliveryIds.isEmpty else { return }
        try checkWritable("record suppressed deliveries")
        try db.transaction { c in
            var namespaces: [String: String] = [:]
            for id in deliveryIds {
                _ = try SQLiteStore.markSuppressed(
                    "id = \(id)", limit: 1, reason: reason, at: SQLiteStore.ms(now), c, namespaces: &namespaces)
            }
        }
    }

    /// Marks the pending deliveries `filter` selects `suppressed` with `reason`, at most `limit` of
    /// them in `rowid` order, each with its event-log entry, inside the caller's transaction; returns
    /// their rows as they are now.
    static func markSuppressed(
        _ filter: SQL, limit: Int, reason: String, at: Int64, _ c: SQLiteConnection,
        namespaces: inout [String: String]
    ) throws -> [SQLiteRow] {
        let rows = try c.query(
            """
            UPDATE deliveries SET state = 'suppressed', reason = \(reason), lease_owner = NULL, lease_until = NULL,
              updated_at = \(at)
            WHERE rowid IN (
              SELECT rowid FROM deliveries WHERE \(filter) AND state = 'pending' ORDER BY rowid LIMIT \(limit))
            RETURNING *
            """)
        for row in rows {
            try appendDeliveryEvent(
                of: row, outcome: "suppressed", attempt: Int(row.int("attempts") ?? 0), reason: reason, at: at, c,
                namespaces: &namespaces)
        }
        return rows
    }

    /// See ``HeraldStore``.
    public func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device] {
        guard !attempts.isEmpty else { return [] }
        return try recording(attempts, now: now) { _ in }.removed
    }

    /// See ``HeraldStore``: the results and the suppression in one transaction, the suppression one
    /// `UPDATE … RETURNING` over the notification's index.
    public func record(_ attempts: [AttemptRecord], now: Date, suppressing suppression: StepSuppression) throws
        -> (removed: [Device], suppressed: [DeliveryRecord], complete: Bool)
    {
        guard attempts.contains(where: { $0.state == .delivered }), !suppression.channels.isEmpty else {
            return (try record(attempts, now: now), [], false)
        }
        let (removed, rows) = try recording(attempts, now: now) { c in
            var namespaces: [String: String] = [:]
            return try SQLiteStore.markSuppressed(
                """
                notification_id = \(suppression.notificationId) AND step = \(suppression.step)
                  AND channel IN (\(list: suppression.channels.sorted()))
                """, limit: StepSuppression.limit, reason: suppression.reason, at: SQLiteStore.ms(now), c,
                namespaces: &namespaces)
        }
        return (removed, try rows.map { try $0.delivery() }, rows.count < StepSuppression.limit)
    }

    /// Records `attempts`, then runs `then`, in one transaction; returns the devices removed as dead
    /// and what `then` returned.
    private func recording<T>(_ attempts: [AttemptRecord], now: Date, then: (SQLiteConnection) throws -> T) throws
        -> (removed: [Device], then: T)
    {
        try checkWritable("record delivery results")
        defer {
            if attempts.contains(where: { $0.removeDevice != nil }) {
                deviceGeneration.add(1, ordering: .sequentiallyConsistent)
            }
        }
        return try writing("record delivery results") {
            try db.transaction { c in (try SQLiteStore.recordAttempts(attempts, now: now, c), try then(c)) }
        }
    }

    /// Applies `attempts` inside the caller's transaction; returns the devices removed as dead.
    private static func recordAttempts(_ attempts: [AttemptRecord], now: Date, _ c: SQLiteConnection) throws
        -> [Device]
    {
        // A chunk's results in three set-based statements (issue 19); a batch naming a delivery twice
        // keeps the row-by-row path, whose later result wins.
        if attempts.count > 1, Set(attempts.map(\.deliveryId)).count == attempts.count {
            // Slices of 1,000 keep each statement well under SQLite's bound-parameter limit.
            return try stride(from: 0, to: attempts.count, by: 1_000).flatMap {
                try SQLiteStore.recordBatch(Array(attempts[$0..<min(attempts.count, $0 + 1_000)]), now: now, c)
            }
        }
        let at = SQLiteStore.ms(now)
        var removed: [Device] = []
        var namespaces: [String: String] = [:]
        for a in attempts {
            let details = a.detailsText
            let state = a.state.rawValue
            let updated = try c.query(
                """
                UPDATE deliveries SET state = \(state), attempts = \(a.attempt),
                  next_attempt_at = \(a.nextAttemptAt.map(SQLiteStore.ms)), status = \(a.status),
                  reason = \(a.reason), provider_id = COALESCE(\(a.providerMessageId), provider_id),
                  details = COALESCE(\(details), details), lease_owner = NULL, lease_until = NULL, updated_at = \(at)
                WHERE id = \(a.deliveryId)
                RETURNING notification_id, channel, device_id
                """)
            for row in updated {
                try SQLiteStore.appendDeliveryEvent(
                    of: row, outcome: a.state.reportOutcome, attempt: a.attempt, reason: a.reason, at: at, c,
                    namespaces: &namespaces)
            }
            try c.run(
                """
                INSERT OR REPLACE INTO attempts(delivery_id, attempt, at, outcome, status, reason)
                VALUES(\(a.deliveryId), \(a.attempt), \(at), \(state), \(a.status), \(a.reason))
                """)
            if a.state == .dead, let r = a.removeDevice {
                let match: SQL = """
                    namespace = \(r.namespace) AND device_id = \(r.deviceId) AND platform = \(r.platform)
                      AND (\(r.address) IS NULL OR address IS \(r.address))
                    """
                for row in try c.query("SELECT * FROM devices WHERE \(match)") {
                    removed.append(try row.device())
                }
                try c.run("DELETE FROM devices WHERE \(match)")
            }
        }
        return removed
    }

    /// See ``HeraldStore``.
    public func notificationsWithPendingDeliveries(now: Date) throws -> [String] {
        try db.query(
            """
            SELECT DISTINCT d.notification_id AS id, n.created_at FROM deliveries d JOIN notifications n ON n.id = d.notification_id
            WHERE d.state = 'pending' AND (d.lease_owner IS NULL OR d.lease_until < \(SQLiteStore.ms(now)))
            ORDER BY n.created_at
            """
        ).compactMap { $0.string("id") }
    }

    /// See ``HeraldStore``.
    public func releaseLeases(ownedBy owners: [String]) throws {
        guard !owners.isEmpty else { return }
        try checkWritable("release the leases of stopped processes")
        try db.transaction { c in
            for o in owners {
                try c.run("UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = \(o)")
            }
        }
    }

    /// See ``HeraldStore``.
    public func renewLeases(owner: String, deliveryIds: [String], until: Date) throws {
        guard !deliveryIds.isEmpty else { return }
        try checkWritable("renew delivery leases")
        try db.transaction { c in
            for start in stride(from: 0, to: deliveryIds.count, by: 500) {
                let ids = deliveryIds[start..<min(deliveryIds.count, start + 500)]
                try c.run(
                    """
                    UPDATE deliveries SET lease_until = \(SQLiteStore.ms(until))
                    WHERE lease_owner = \(owner) AND id IN (\(list: ids))
                    """)
            }
        }
    }

    /// See ``HeraldStore``.
    public func leaseOwners() throws -> [String] {
        try db.query(SQL(stringLiteral: StoreSQL.leaseOwners)).compactMap { $0.string("lease_owner") }
    }

    /// See ``HeraldStore``.
    public func nextDueTime() throws -> Date? {
        try db.queryOne(SQL(stringLiteral: StoreSQL.nextDueTime))?.date("t")
    }

    /// See ``HeraldStore``.
    public func deliveryCounts() throws -> [DeliveryState: Int] {
        StoreRows.deliveryCounts(try db.query(SQL(stringLiteral: StoreSQL.deliveryCounts)))
    }

    /// See ``HeraldStore``: two counts in the partial indexes of pending and retry rows. (A
    /// `GROUP BY state` sorts every delivery ever stored; a worker ran it after each pass.)
    public func outstandingCounts() throws -> (pending: Int, retry: Int) {
        StoreRows.outstanding(try db.queryOne(SQL(stringLiteral: StoreSQL.outstandingCounts)))
    }
}
