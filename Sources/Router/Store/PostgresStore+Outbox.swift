import ChannelAPI
import Foundation
import HeraldPostgres

/// The outbox on PostgreSQL: notifications, their deliveries, claims, results and leases.
extension PostgresStore {
    // MARK: Notifications and outbox

    /// Writes the notification's row in `c`'s transaction; an id already stored is
    /// ``StoreError/duplicateNotification(_:)``.
    func insertNotificationRow(_ n: HeraldNotification, steps: [StepRule], at: Int64, _ c: PostgresConnection) throws {
        do {
            try c.run(StoreSQL.insertNotification(n, steps: steps, at: at))
        } catch {
            // `run` throws only PostgresError.
            throw error.isUniqueViolation ? StoreError.duplicateNotification(n.id) : error
        }
    }

    /// See ``HeraldStore``: the notification, its deliveries (one statement per 5,000) and its
    /// event-log entry in one transaction, then (debounced) a wake-up `NOTIFY` for the workers.
    public func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord], now: Date
    ) throws {
        let n = notification
        let at = Self.ms(now)
        let wake = deliveries.contains { $0.state == .pending } && shouldNotify()
        try call {
            try db.transaction { c in
                try insertNotificationRow(n, steps: steps, at: at, c)
                var start = 0
                while start < deliveries.count {
                    let slice = Array(deliveries[start..<min(deliveries.count, start + 5_000)])
                    start += 5_000
                    try c.run(
                        """
                        INSERT INTO deliveries(
                          id, notification_id, step, position, channel, device_id, platform, state, attempts, reason,
                          updated_at)
                        SELECT i, n, s::int, p::int, c, d, pl, st, 0, r, \(at)
                        FROM unnest(\(textArray: slice.map(\.id))::text[], \(textArray: slice.map(\.notificationId))::text[],
                          \(textArray: slice.map { String($0.step) })::text[], \(textArray: slice.map { String($0.position) })::text[],
                          \(textArray: slice.map(\.channel))::text[], \(optionalTextArray: slice.map(\.deviceId))::text[],
                          \(optionalTextArray: slice.map(\.platform))::text[], \(textArray: slice.map(\.state.rawValue))::text[],
                          \(optionalTextArray: slice.map(\.reason))::text[]) AS x(i, n, s, p, c, d, pl, st, r)
                        """)
                }
                // The notification, then the deliveries suppressed at plan time (outcomes too), as SQLite.
                let suppressed = deliveries.filter { $0.state == .suppressed }.map { d in
                    (
                        n.namespace, "delivery", n.id,
                        EventLogData.delivery(
                            notificationId: n.id, channel: d.channel, deviceId: d.deviceId, outcome: "suppressed",
                            attempt: 0, reason: d.reason)
                    )
                }
                try Self.appendEvents(
                    [
                        (
                            n.namespace, "notification", n.id,
                            EventLogData.notification(id: n.id, namespace: n.namespace, planned: deliveries.count)
                        )
                    ] + suppressed, at: at, c)
                if wake { try c.run("SELECT pg_notify(\(Self.wakeChannel), '')") }
            }
        }
    }

    /// Whether this process may send a wake-up now (at most one per ``notifyInterval``).
    func shouldNotify() -> Bool {
        let now = clock.now().millisecondsSince1970
        let last = lastNotify.load(ordering: .relaxed)
        guard now - last >= Self.notifyInterval else { return false }
        return lastNotify.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
    }

    /// Appends event-log entries as the transaction's last write, under the advisory lock that
    /// orders sequence numbers by commit: a transaction that took a number holds the lock until it
    /// commits, so no later-committing transaction has a lower number.
    static func appendEvents(
        _ entries: [(namespace: String, kind: String, notificationId: String, data: JSONValue)], at: Int64,
        _ c: PostgresConnection
    ) throws {
        guard !entries.isEmpty else { return }
        try c.run("SELECT pg_advisory_xact_lock(\(eventLogLock))")
        try c.run(
            """
            INSERT INTO event_log(sequence, namespace, kind, notification_id, data, created_at)
            SELECT nextval('event_log_sequence'), ns, k, nid, d, \(at)
            FROM unnest(\(textArray: entries.map(\.namespace))::text[], \(textArray: entries.map(\.kind))::text[],
              \(textArray: entries.map(\.notificationId))::text[],
              \(textArray: entries.map(\.data.canonicalString))::text[]) WITH ORDINALITY AS x(ns, k, nid, d, o)
            ORDER BY o
            """)
    }

    /// See ``HeraldStore``.
    public func notification(id: String) throws -> StoredNotification? {
        try call {
            try db.queryOne(StoreSQL.notification(id: id))?.storedNotification(
                id: id)
        }
    }

    /// See ``HeraldStore``.
    public func deliveries(notificationId: String) throws -> [DeliveryRecord] {
        try call {
            try db.query(
                """
                SELECT * FROM deliveries WHERE notification_id = \(notificationId)
                ORDER BY step, position, device_id NULLS FIRST, platform NULLS FIRST
                """
            ).map { try $0.delivery() }
        }
    }

    /// Planner settings for the outbox's hot statements, local to their transaction: no sequential
    /// or bitmap scans, no hash or merge joins, no sorts where an index gives the order.
    ///
    /// Those statements touch at most a batch of rows, found by key (`id = ANY`, a join on `unnest`)
    /// or taken in index order under a `LIMIT`, so index access is always the right plan. The planner
    /// cannot know it from an outbox's statistics: the count of pending rows swings from none to a
    /// whole fan-out between two autovacuum analyses, and with statistics taken while few were pending
    /// it sorted every pending row for each claim and hashed the whole table for each record (each
    /// batch then costs time in proportion to the outbox, so a drain is quadratic). Measured with
    /// `scripts/bench/pg.sh` (see BENCHMARKS.md).
    ///
    /// The statements are prepared (``PostgresDatabase``), and their generic plan is used from the
    /// first run: with only index access left there is nothing for a plan per set of values to gain,
    /// and the five custom plans PostgreSQL makes first on each connection cost a short-lived worker
    /// (and each of its connections) planning time for every hot statement.
    static let keyedAccess: PostgresSQL = """
        SELECT set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true),
          set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
          set_config('enable_sort', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)
        """

    /// Runs `sql` after ``keyedAccess`` in one pipeline (one round trip, one implicit transaction)
    /// and returns its rows.
    static func keyed(_ db: PostgresDatabase, _ sql: PostgresSQL) throws -> [PostgresRow] {
        try db.pipeline([keyedAccess, sql])[1]
    }

    /// See ``HeraldStore``: `FOR UPDATE SKIP LOCKED`, so concurrent claimers never wait on or
    /// share a row.
    public func claimPending(
        notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date
    ) throws -> [DeliveryRecord] {
        try writing("claim deliveries") {
            try db.query(
                """
                UPDATE deliveries d SET lease_owner = \(owner), lease_until = \(Self.ms(until))
                FROM (SELECT id FROM deliveries
                      WHERE notification_id = \(notificationId) AND step = \(step) AND channel = \(channel)
                        AND state = 'pending'
                        AND (lease_owner IS NULL OR lease_owner = \(owner) OR lease_until < \(Self.ms(now)))
                      ORDER BY id FOR UPDATE SKIP LOCKED) c
                WHERE d.id = c.id
                RETURNING d.*
                """
            ).map { try $0.delivery() }.sorted {
                ($0.deviceId ?? "", $0.platform ?? "") < ($1.deviceId ?? "", $1.platform ?? "")
            }
        }
    }

    /// See ``HeraldStore``: a batch of at most `limit`, oldest due first, `FOR UPDATE SKIP LOCKED`.
    public func claimDue(owner: String, until: Date, now: Date, limit: Int) throws -> [DeliveryRecord] {
        try writing("claim due retries") {
            let at = Self.ms(now)
            return try Self.keyed(
                db,
                """
                UPDATE deliveries d SET lease_owner = \(owner), lease_until = \(Self.ms(until))
                FROM (SELECT id FROM deliveries
                      WHERE state = 'retry' AND next_attempt_at <= \(at)
                        AND (lease_owner IS NULL OR lease_owner = \(owner) OR lease_until < \(at))
                      ORDER BY next_attempt_at LIMIT \(max(0, limit))
                      FOR UPDATE SKIP LOCKED) c
                WHERE d.id = c.id
                RETURNING d.*
                """
            ).map { try $0.delivery() }.sorted {
                ($0.nextAttemptAt ?? .distantPast) < ($1.nextAttemptAt ?? .distantPast)
            }
        }
    }

    /// See ``HeraldStore``: one statement for the batch, and one event-log entry per suppressed delivery.
    public func suppress(deliveryIds: [String], reason: String, now: Date) throws {
        guard !deliveryIds.isEmpty else { return }
        try call {
            try db.transaction { c in
                let rows = try c.query(
                    """
                    UPDATE deliveries d SET state = 'suppressed', reason = \(reason), lease_owner = NULL,
                      lease_until = NULL, updated_at = \(Self.ms(now))
                    FROM notifications n,
                      (SELECT id FROM deliveries WHERE id = ANY(\(textArray: deliveryIds)::text[]) ORDER BY id FOR UPDATE) l
                    WHERE d.id = l.id AND d.state = 'pending' AND n.id = d.notification_id
                    RETURNING d.notification_id, d.channel, d.device_id, d.attempts, n.namespace
                    """)
                try Self.appendEvents(
                    rows.map { r in
                        (
                            r.string("namespace") ?? "", "delivery", r.string("notification_id") ?? "",
                            EventLogData.delivery(
                                notificationId: r.string("notification_id") ?? "", channel: r.string("channel") ?? "",
                                deviceId: r.string("device_id"), outcome: "suppressed",
                                attempt: Int(r.int("attempts") ?? 0), reason: reason)
                        )
                    }, at: Self.ms(now), c)
            }
        }
    }

    /// See ``HeraldStore``: the whole batch in one pipeline, so one round trip and one implicit
    /// transaction: the rows locked in id order, one `UPDATE … FROM unnest(…)`, one `INSERT` of
    /// attempts, a `DELETE` per dead device, then the event-log lock and one `INSERT` of the
    /// entries (their `data` built by the server, as ``EventLogData/delivery`` builds it).
    public func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device] {
        guard !attempts.isEmpty else { return [] }
        // One result per delivery in a batch: the last one given wins, as applying them in order would.
        var latest: [String: Int] = [:]
        for (i, a) in attempts.enumerated() { latest[a.deliveryId] = i }
        let batch = attempts.enumerated().filter { latest[$0.element.deliveryId] == $0.offset }.map(\.element)
        let statements = Self.recordStatements(batch, at: Self.ms(now))
        return try writing("record delivery results") {
            let results = Array(try db.pipeline([Self.keyedAccess] + statements.list).dropFirst())
            var removed: [Device] = []
            for index in statements.deletes where index < results.count {
                removed += try results[index].map { try $0.device() }
            }
            return removed
        }
    }

    /// The statements of ``record(_:now:)`` and the indexes of its device `DELETE`s.
    static func recordStatements(_ batch: [AttemptRecord], at: Int64) -> (list: [PostgresSQL], deletes: [Int]) {
        let ids = batch.map(\.deliveryId)
        let states = batch.map(\.state.rawValue)
        let numbers = batch.map { String($0.attempt) }
        let statuses = batch.map { $0.status.map(String.init) }
        let reasons = batch.map(\.reason)
        let details = batch.map(\.detailsText)
        var list: [PostgresSQL] = [
            // Rows are locked in id order by every multi-row write here, so two transactions
            // touching overlapping rows (a renewal and a record) queue instead of deadlocking.
            "SELECT 1 FROM deliveries WHERE id = ANY(\(textArray: ids)::text[]) ORDER BY id FOR UPDATE",
            // The attempts rows come from the rows the update changed, so the values are parsed once.
            """
            WITH u AS (
              UPDATE deliveries d SET state = x.st, attempts = x.att::int, next_attempt_at = x.nxt::bigint,
                status = x.stat::int, reason = x.r, provider_id = COALESCE(x.pid, d.provider_id),
                details = COALESCE(x.det, d.details), lease_owner = NULL, lease_until = NULL, updated_at = \(at)
              FROM unnest(\(textArray: ids)::text[], \(textArray: states)::text[], \(textArray: numbers)::text[],
                \(optionalTextArray: batch.map { $0.nextAttemptAt.map { String(Self.ms($0)) } })::text[],
                \(optionalTextArray: statuses)::text[], \(optionalTextArray: reasons)::text[],
                \(optionalTextArray: batch.map(\.providerMessageId))::text[],
                \(optionalTextArray: details)::text[]) AS x(id, st, att, nxt, stat, r, pid, det)
              WHERE d.id = x.id
              RETURNING d.id, d.attempts, d.state, d.status, d.reason)
            INSERT INTO attempts(delivery_id, attempt, at, outcome, status, reason)
            SELECT u.id, u.attempts, \(at), u.state, u.status, u.reason FROM u
            ON CONFLICT(delivery_id, attempt) DO UPDATE SET
              at = excluded.at, outcome = excluded.outcome, status = excluded.status, reason = excluded.reason
            """,
        ]
        var deletes: [Int] = []
        for a in batch where a.state == .dead {
            guard let r = a.removeDevice else { continue }
            deletes.append(list.count)
            list.append(
                """
                DELETE FROM devices WHERE namespace = \(r.namespace) AND device_id = \(r.deviceId)
                  AND platform = \(r.platform) AND (\(r.address)::text IS NULL OR address IS NOT DISTINCT FROM \(r.address))
                RETURNING *
                """)
        }
        // The event log last, under the lock that orders its sequence by commit (see appendEvents);
        // the pipeline's implicit transaction holds it until it commits. Its values are the ones the
        // update above just wrote; the batch's order is kept.
        list.append("SELECT pg_advisory_xact_lock(\(eventLogLock))")
        list.append(
            """
            INSERT INTO event_log(sequence, namespace, kind, notification_id, data, created_at)
            SELECT nextval('event_log_sequence'), n.namespace, 'delivery', d.notification_id,
              json_strip_nulls(json_build_object('notificationId', d.notification_id, 'channel', d.channel,
                'outcome', d.state, 'attempt', d.attempts, 'deviceId', d.device_id, 'reason', d.reason))::text, \(at)
            FROM unnest(\(textArray: ids)::text[]) WITH ORDINALITY AS x(id, o)
            JOIN deliveries d ON d.id = x.id JOIN notifications n ON n.id = d.notification_id
            ORDER BY x.o
            """)
        return (list, deletes)
    }

    /// See ``HeraldStore``: one statement. Pending rows are taken in id order (a partial index
    /// holds only them), `FOR UPDATE SKIP LOCKED`, skipping rows of a notification that still has
    /// pending rows in an earlier step and rows leased by anyone (this owner included) whose lease
    /// has not expired; the notifications come back in the same statement.
    public func claimPendingBatch(owner: String, until: Date, now: Date, limit: Int) throws -> PendingBatch {
        try writing("claim deliveries") {
            let rows = try Self.keyed(db, Self.claimBatchStatement(owner: owner, until: until, now: now, limit: limit))
            var deliveries: [DeliveryRecord] = []
            var notifications: [String: StoredNotification] = [:]
            deliveries.reserveCapacity(rows.count)
            notifications.reserveCapacity(rows.count)
            for row in rows {
                let record = try row.delivery()
                deliveries.append(record)
                if notifications[record.notificationId] == nil {
                    notifications[record.notificationId] = try row.storedNotification(
                        id: record.notificationId, prefix: "n_")
                }
            }
            deliveries.sort { $0.id < $1.id }
            return PendingBatch(deliveries: deliveries, notifications: notifications)
        }
    }

    /// The statement of ``claimPendingBatch(owner:until:now:limit:)`` (run after ``keyedAccess``).
    static func claimBatchStatement(owner: String, until: Date, now: Date, limit: Int) -> PostgresSQL {
        """
        UPDATE deliveries d SET lease_owner = \(owner), lease_until = \(Self.ms(until))
        FROM (SELECT p.id FROM deliveries p
              WHERE p.state = 'pending' AND (p.lease_owner IS NULL OR p.lease_until < \(Self.ms(now)))
                AND (p.step = 0 OR NOT EXISTS (
                  SELECT 1 FROM deliveries e WHERE e.notification_id = p.notification_id
                    AND e.state = 'pending' AND e.step < p.step))
              ORDER BY p.id LIMIT \(max(1, limit)) FOR UPDATE OF p SKIP LOCKED) c,
          notifications n
        WHERE d.id = c.id AND n.id = d.notification_id
        RETURNING d.*, n.body AS n_body, n.steps AS n_steps, n.created_at AS n_created_at
        """
    }

    /// See ``HeraldStore``.
    public func notificationsWithPendingDeliveries(now: Date) throws -> [String] {
        try call {
            try db.query(
                """
                SELECT n.id FROM notifications n
                WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.notification_id = n.id AND d.state = 'pending'
                  AND (d.lease_owner IS NULL OR d.lease_until < \(Self.ms(now))))
                ORDER BY n.created_at, n.ord
                """
            ).compactMap { $0.string("id") }
        }
    }

    /// See ``HeraldStore``.
    public func releaseLeases(ownedBy owners: [String]) throws {
        guard !owners.isEmpty else { return }
        _ = try call {
            try db.run(
                """
                UPDATE deliveries d SET lease_owner = NULL, lease_until = NULL
                FROM (SELECT id FROM deliveries WHERE lease_owner = ANY(\(textArray: owners)::text[]) ORDER BY id FOR UPDATE) l
                WHERE d.id = l.id AND d.lease_owner = ANY(\(textArray: owners)::text[])
                """)
        }
    }

    /// See ``HeraldStore``.
    public func renewLeases(owner: String, deliveryIds: [String], until: Date) throws {
        guard !deliveryIds.isEmpty else { return }
        _ = try call {
            try db.run(
                """
                UPDATE deliveries d SET lease_until = \(Self.ms(until))
                FROM (SELECT id FROM deliveries WHERE lease_owner = \(owner) AND id = ANY(\(textArray: deliveryIds)::text[])
                      ORDER BY id FOR UPDATE) l
                WHERE d.id = l.id AND d.lease_owner = \(owner)
                """)
        }
    }

    /// See ``HeraldStore``.
    public func leaseOwners() throws -> [String] {
        try call {
            try db.query(PostgresSQL(stringLiteral: StoreSQL.leaseOwners)).compactMap { $0.string("lease_owner") }
        }
    }

    /// See ``HeraldStore``.
    public func nextDueTime() throws -> Date? {
        try call {
            try db.queryOne(PostgresSQL(stringLiteral: StoreSQL.nextDueTime))?.date("t")
        }
    }

    /// See ``HeraldStore``: two counts in the partial indexes of pending and retry rows (index
    /// plans, see ``keyedAccess``).
    public func outstandingCounts() throws -> (pending: Int, retry: Int) {
        try call {
            StoreRows.outstanding(try Self.keyed(db, PostgresSQL(stringLiteral: StoreSQL.outstandingCounts)).first)
        }
    }

    /// See ``HeraldStore``.
    public func deliveryCounts() throws -> [DeliveryState: Int] {
        try call {
            StoreRows.deliveryCounts(try db.query(PostgresSQL(stringLiteral: StoreSQL.deliveryCounts)))
        }
    }
}
