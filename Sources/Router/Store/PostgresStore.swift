import ChannelAPI
import Foundation
import HeraldPostgres
import HeraldSync
import Synchronization

/// The scale-out store: one PostgreSQL database shared by any number of Herald processes on any
/// number of hosts (docs/scale-out.md).
///
/// It keeps what ``SQLiteStore`` keeps, in the same shape (times as milliseconds since 1970), under
/// versioned migrations (table `herald_schema`; a newer schema is refused). Work is claimed with
/// `FOR UPDATE SKIP LOCKED` under a lease, so workers never wait on each other's rows and a dead
/// worker's rows are taken over, with the same delivery ids, once its lease expires. Results are
/// recorded in one statement per batch. A new notification wakes the workers with `NOTIFY`
/// (at most one per process every ``notifyInterval``; workers also poll).
public final class PostgresStore: HeraldStore {
    let db: PostgresDatabase
    /// The database URL without its password.
    public var redactedURL: String { db.redactedURL }
    let clock: any HeraldClock
    private let lastNotify = Atomic<Int64>(0)
    private let listener = Locked<PostgresListener?>(nil)

    /// The `LISTEN`/`NOTIFY` channel that announces new outbox work.
    static let wakeChannel = "herald_outbox"
    /// Key of the advisory lock that orders the event log's sequence by commit ("HRLD").
    static let eventLogLock: Int64 = 0x4852_4C44
    /// Key of the advisory lock held while migrating.
    static let migrationLock: Int64 = 0x4852_4C45
    /// A process sends at most one wake-up `NOTIFY` per this many milliseconds (a busy `NOTIFY`
    /// takes an instance-wide lock at commit); workers also poll, so a skipped one only delays.
    static let notifyInterval: Int64 = 100

    /// Connects to `url` (libpq's URL or key=value form; the password may come from the URL,
    /// `PGPASSWORD` or `~/.pgpass`; `sslmode` passes through) and migrates the schema.
    ///
    /// Throws ``StoreError/unreachable(store:detail:)`` when the server cannot be reached and
    /// ``StoreError/newerSchema(path:version:supported:)`` for a schema from a newer Herald.
    ///
    /// `preparedStatements` (the default) lets each connection prepare the statements it runs, so
    /// the server parses and plans each one once per connection; turn it off behind a pooler that
    /// does not keep prepared statements (PgBouncer before 1.21 in transaction mode).
    public init(
        url: String, clock: any HeraldClock = SystemClock(), maximumConnections: Int = 8,
        preparedStatements: Bool = true
    ) throws {
        self.clock = clock
        do {
            db = try PostgresDatabase(
                url: url, maximumConnections: maximumConnections, preparedStatements: preparedStatements)
        } catch {
            throw StoreError.unreachable(store: PostgresURL.redacted(url), detail: error.description)
        }
        do {
            try migrate()
        } catch {
            db.close()
            throw Self.mapped(error, db.redactedURL)
        }
    }

    /// Closes every connection.
    public func close() {
        listener.withLock { $0?.close() }
        db.close()
    }

    // MARK: Schema

    /// The newest schema version this build knows.
    static var newestVersion: Int { migrations.count }

    static let migrations: [String] = [
        """
        CREATE TABLE devices(
          namespace TEXT NOT NULL, device_id TEXT NOT NULL, platform TEXT NOT NULL,
          address TEXT, fields TEXT NOT NULL, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
          PRIMARY KEY(namespace, device_id, platform));
        CREATE INDEX devices_address ON devices(address);
        CREATE TABLE notifications(
          id TEXT PRIMARY KEY, namespace TEXT NOT NULL, type TEXT NOT NULL, tag TEXT,
          body TEXT NOT NULL, steps TEXT NOT NULL DEFAULT '[]', created_at BIGINT NOT NULL,
          ord BIGSERIAL NOT NULL);
        CREATE INDEX notifications_namespace ON notifications(namespace, created_at);
        CREATE INDEX notifications_created ON notifications(created_at);
        CREATE TABLE deliveries(
          id TEXT PRIMARY KEY,
          notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
          step INTEGER NOT NULL, position INTEGER NOT NULL, channel TEXT NOT NULL,
          device_id TEXT, platform TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
          next_attempt_at BIGINT, status INTEGER, reason TEXT, provider_id TEXT, details TEXT,
          lease_owner TEXT, lease_until BIGINT, updated_at BIGINT NOT NULL);
        CREATE INDEX deliveries_notification ON deliveries(notification_id, step, channel);
        CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'retry';
        CREATE INDEX deliveries_pending ON deliveries(notification_id) WHERE state = 'pending';
        CREATE INDEX deliveries_lease_owner ON deliveries(lease_owner) WHERE lease_owner IS NOT NULL;
        CREATE TABLE attempts(
          delivery_id TEXT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
          attempt INTEGER NOT NULL, at BIGINT NOT NULL, outcome TEXT NOT NULL, status INTEGER, reason TEXT,
          PRIMARY KEY(delivery_id, attempt));
        CREATE TABLE events(
          id BIGSERIAL PRIMARY KEY,
          notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
          kind TEXT NOT NULL, action_id TEXT, action_data TEXT, device_id TEXT, at BIGINT NOT NULL);
        CREATE INDEX events_notification ON events(notification_id);
        CREATE TABLE channel_state(
          channel TEXT NOT NULL, key TEXT NOT NULL, value BYTEA, updated_at BIGINT NOT NULL,
          PRIMARY KEY(channel, key));
        CREATE TABLE badge_tags(
          namespace TEXT NOT NULL, tag TEXT NOT NULL, at BIGINT NOT NULL, PRIMARY KEY(namespace, tag));
        CREATE TABLE cooldowns(
          namespace TEXT NOT NULL, step_key TEXT NOT NULL, tag TEXT NOT NULL, at BIGINT NOT NULL,
          PRIMARY KEY(namespace, step_key, tag));
        CREATE SEQUENCE event_log_sequence;
        CREATE TABLE event_log(
          sequence BIGINT PRIMARY KEY, namespace TEXT NOT NULL, kind TEXT NOT NULL,
          notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
          data TEXT NOT NULL, created_at BIGINT NOT NULL);
        CREATE INDEX event_log_namespace ON event_log(namespace, sequence);
        CREATE INDEX event_log_notification ON event_log(notification_id);
        """,
        // 2: the batched drain claims pending rows in id order and checks earlier steps by index
        // (claimPendingBatch).
        """
        CREATE INDEX deliveries_pending_id ON deliveries(id) WHERE state = 'pending';
        CREATE INDEX deliveries_pending_step ON deliveries(notification_id, step) WHERE state = 'pending';
        """,
        // 3: ids unique per namespace (NotificationKey): a notification stored under a scoped key
        // keeps the client's id here, found by its partial index; plain keys leave it NULL.
        """
        ALTER TABLE notifications ADD COLUMN public_id TEXT;
        CREATE INDEX notifications_public_id ON notifications(public_id) WHERE public_id IS NOT NULL;
        """,
    ]

    /// Applies the missing migrations under an advisory lock, so processes starting together
    /// migrate once; refuses a schema newer than this build.
    private func migrate() throws {
        try db.transaction { c in
            try c.run("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
            try c.execute("CREATE TABLE IF NOT EXISTS herald_schema(version INTEGER NOT NULL)")
            let current = Int(try c.queryOne("SELECT MAX(version) AS v FROM herald_schema")?.int("v") ?? 0)
            if current > Self.newestVersion {
                throw StoreError.newerSchema(path: db.redactedURL, version: current, supported: Self.newestVersion)
            }
            for (offset, script) in Self.migrations.enumerated() where offset + 1 > current {
                try c.execute(script)
                try c.run("INSERT INTO herald_schema(version) VALUES(\(offset + 1))")
            }
        }
    }

    /// The current schema version (for tests).
    func schemaVersion() throws -> Int {
        Int(try db.query("SELECT MAX(version) AS v FROM herald_schema").first?.int("v") ?? 0)
    }

    // MARK: Errors

    /// A failure as the caller should see it: lost connections become ``StoreError/unreachable(store:detail:)``.
    static func mapped(_ error: any Error, _ url: String) -> any Error {
        if let e = error as? PostgresError, e.isConnectionFailure {
            return StoreError.unreachable(store: url, detail: e.description)
        }
        return error
    }

    /// Runs `body`, mapping connection failures. A deadlock or serialization failure (the whole
    /// transaction was rolled back) is retried, up to 5 times: every body here is a complete
    /// transaction that can run again.
    func call<T>(_ body: () throws -> T) throws -> T {
        do { return try Self.retrying(body) } catch { throw Self.mapped(error, db.redactedURL) }
    }

    static func retrying<T>(_ body: () throws -> T) throws -> T {
        var attempt = 0
        while true {
            do {
                return try body()
            } catch let error as PostgresError where error.isRetryable && attempt < 5 {
                attempt += 1
                usleep(UInt32.random(in: 1_000...(5_000 * UInt32(attempt))))
            }
        }
    }

    /// Runs a write the outbox depends on; a database failure becomes ``StoreError/writeFailed(operation:detail:)``
    /// (or ``StoreError/unreachable(store:detail:)``).
    private func writing<T>(_ operation: String, _ body: () throws -> T) throws -> T {
        do {
            return try Self.retrying(body)
        } catch let error as PostgresError {
            if error.isConnectionFailure {
                throw StoreError.unreachable(store: db.redactedURL, detail: error.description)
            }
            throw StoreError.writeFailed(
                operation: operation,
                detail: "\(db.redactedURL): \(error) (check the PostgreSQL server's log, its disk space and the "
                    + "role's privileges)")
        }
    }

    // MARK: Encoding helpers

    static func ms(_ d: Date) -> Int64 { d.millisecondsSince1970 }

    // MARK: Devices

    /// See ``HeraldStore``.
    public func upsertDevice(_ device: Device, now: Date) throws -> UpsertResult {
        try call { try db.transaction { c in try Self.upsert(device, now: now, c) } }
    }

    /// See ``HeraldStore``: every device in one transaction, so a failure stores none of them.
    public func upsertDevices(_ devices: [Device], now: Date) throws -> [UpsertResult] {
        guard !devices.isEmpty else { return [] }
        return try call { try db.transaction { c in try devices.map { try Self.upsert($0, now: now, c) } } }
    }

    static func upsert(_ device: Device, now: Date, _ c: PostgresConnection) throws -> UpsertResult {
        var moved: [String] = []
        if let address = device.address {
            // Locked, and decided before anything is written: a refusal leaves every registration as it was.
            let others = try c.query(
                """
                SELECT namespace, device_id, platform FROM devices WHERE address = \(address)
                  AND NOT (namespace = \(device.namespace) AND device_id = \(device.deviceId) AND platform = \(device.platform))
                FOR UPDATE
                """)
            let moving = try AddressClaim.moves(
                of: device,
                among: others.map { $0.deviceKey() })
            for o in moving {
                moved.append(o.path)
                _ = try c.run(
                    """
                    DELETE FROM devices
                    WHERE namespace = \(o.namespace) AND device_id = \(o.deviceId) AND platform = \(o.platform)
                    """)
            }
            moved.sort()
        }
        let fields = JSONValue.object(device.fields).canonicalString
        let row = try c.queryOne(
            """
            INSERT INTO devices(namespace, device_id, platform, address, fields, created_at, updated_at)
            VALUES(\(device.namespace), \(device.deviceId), \(device.platform), \(device.address), \(fields),
              \(ms(now)), \(ms(now)))
            ON CONFLICT(namespace, device_id, platform) DO UPDATE SET
              address = excluded.address, fields = excluded.fields, updated_at = excluded.updated_at
            RETURNING (xmax = 0) AS created
            """)
        return UpsertResult(created: row?.bool("created") ?? false, moved: moved)
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int {
        try call {
            if let platform {
                return try db.run(
                    "DELETE FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId) AND platform = \(platform)"
                )
            }
            return try db.run("DELETE FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId)")
        }
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, address: String) throws -> Int {
        try call { try db.run("DELETE FROM devices WHERE namespace = \(namespace) AND address = \(address)") }
    }

    /// See ``HeraldStore``.
    public func devices(namespace: String?) throws -> [Device] {
        try call {
            guard let namespace else {
                return try db.query(PostgresSQL(stringLiteral: StoreSQL.allDevices)).map { try $0.device() }
            }
            return try db.query("SELECT * FROM devices WHERE namespace = \(namespace) ORDER BY device_id, platform")
                .map { try $0.device() }
        }
    }

    /// See ``HeraldStore``.
    public func device(namespace: String, deviceId: String, platform: String) throws -> Device? {
        try call {
            try db.query(
                "SELECT * FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId) AND platform = \(platform)"
            ).first.map { try $0.device() }
        }
    }

    // MARK: Notifications and outbox

    /// Writes the notification's row in `c`'s transaction; an id already stored is
    /// ``StoreError/duplicateNotification(_:)``.
    func insertNotificationRow(_ n: HeraldNotification, steps: [StepRule], at: Int64, _ c: PostgresConnection) throws {
        let body = n.json.canonicalString
        let stepsJSON = StepRule.storedText(steps)
        do {
            try c.run(
                """
                INSERT INTO notifications(id, namespace, type, tag, body, steps, created_at, public_id)
                VALUES(\(n.id), \(n.namespace), \(n.type), \(n.collapseTag), \(body), \(stepsJSON), \(at),
                  \(NotificationKey.isScoped(n.id) ? NotificationKey.publicID(of: n.id) : nil))
                """)
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
            try db.queryOne("SELECT body, steps, created_at FROM notifications WHERE id = \(id)")?.storedNotification(
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

    // MARK: Lifecycle and history

    /// See ``HeraldStore``.
    public func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent {
        try call {
            try db.transaction { c in
                guard let n = try c.queryOne("SELECT namespace FROM notifications WHERE id = \(event.notificationId)")
                else { throw StoreError.unknownNotification(event.notificationId) }
                let data = event.actionDataText
                let row = try c.queryOne(
                    """
                    INSERT INTO events(notification_id, kind, action_id, action_data, device_id, at)
                    VALUES(\(event.notificationId), \(event.kind.rawValue), \(event.actionId), \(data), \(event.deviceId),
                      \(Self.ms(event.at)))
                    RETURNING id
                    """)
                var stored = event
                stored.id = row?.int("id") ?? 0
                try Self.appendEvents(
                    [
                        (
                            n.string("namespace") ?? "", event.kind.rawValue, event.notificationId,
                            EventLogData.lifecycle(stored)
                        )
                    ],
                    at: Self.ms(event.at), c)
                return stored
            }
        }
    }

    /// See ``HeraldStore``.
    public func events(notificationId: String) throws -> [LifecycleEvent] {
        try call {
            try db.query("SELECT * FROM events WHERE notification_id = \(notificationId) ORDER BY id").map {
                try $0.lifecycleEvent(notificationId: notificationId)
            }
        }
    }

    /// See ``HeraldStore``.
    public func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry] {
        var conditions: [PostgresSQL] = []
        if let namespace { conditions.append("namespace = \(namespace)") }
        if let id { conditions.append("id = \(id)") }
        var sql: PostgresSQL = "SELECT id FROM notifications"
        if !conditions.isEmpty { sql.append(" WHERE \(conditions.joined(separator: " AND "))") }
        sql.append(" ORDER BY created_at DESC, ord DESC LIMIT \(max(0, limit))")
        return try historyEntries(ids: call { try db.query(sql).compactMap { $0.string("id") } })
    }

    /// See ``HeraldStore``: by keyset on (created_at, ord), the order of ``history(namespace:id:limit:)``.
    public func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]? {
        let ids: [String]? = try call {
            guard
                let anchor = try db.query(
                    "SELECT created_at, ord FROM notifications WHERE id = \(before) AND namespace = \(namespace)"
                ).first, let at = anchor.int("created_at"), let ord = anchor.int("ord")
            else { return nil }
            return try db.query(
                """
                SELECT id FROM notifications WHERE namespace = \(namespace) AND (created_at, ord) < (\(at), \(ord))
                ORDER BY created_at DESC, ord DESC LIMIT \(max(0, limit))
                """
            ).compactMap { $0.string("id") }
        }
        return try ids.map(historyEntries(ids:))
    }

    /// See ``HeraldStore``: deliveries, attempts, events and event-log entries go with their notification.
    public func purge(before date: Date) throws -> Int {
        try call {
            try db.run(
                """
                DELETE FROM notifications WHERE created_at < \(Self.ms(date)) AND NOT EXISTS (
                  SELECT 1 FROM deliveries d WHERE d.notification_id = notifications.id AND d.state IN ('pending', 'retry'))
                """)
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
            try db.run(
                """
                INSERT INTO badge_tags(namespace, tag, at) VALUES(\(namespace), \(tag), \(Self.ms(now)))
                ON CONFLICT(namespace, tag) DO UPDATE SET at = excluded.at
                """)
        }
    }

    /// See ``HeraldStore``.
    public func pendingTagCount(namespace: String) throws -> Int {
        try call {
            Int(
                try db.query("SELECT COUNT(*) AS n FROM badge_tags WHERE namespace = \(namespace)").first?.int("n") ?? 0
            )
        }
    }

    /// See ``HeraldStore``.
    public func clearBadge(namespace: String) throws {
        try call { _ = try db.run("DELETE FROM badge_tags WHERE namespace = \(namespace)") }
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
                        """
                        SELECT at FROM cooldowns WHERE namespace = \(namespace) AND step_key = \(key) AND tag = \(tag)
                        FOR UPDATE
                        """)
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

    // MARK: Wake-ups

    /// Waits until another process announces new outbox work (`NOTIFY`) or `timeout` passes;
    /// returns `true` when woken. Blocks a thread of its own, never the caller's task executor.
    public func waitForWork(timeout: Duration) async -> Bool {
        let listener: PostgresListener
        if let l = self.listener.withLock({ $0 }) {
            listener = l
        } else if let l = try? PostgresListener(database: db, channel: Self.wakeChannel) {
            self.listener.withLock { $0 = l }
            listener = l
        } else {
            try? await Task.sleep(for: timeout)
            return false
        }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let woken: Bool
                do { woken = !(try listener.wait(timeout: timeout)).isEmpty } catch {
                    // The server is away: wait out the timeout instead of spinning.
                    Thread.sleep(forTimeInterval: timeout.timeInterval)
                    woken = false
                }
                continuation.resume(returning: woken)
            }
        }
    }
}

/// One channel's slice of `channel_state`.
struct PostgresChannelState: ChannelStateStore {
    let db: PostgresDatabase
    let channel: String
    let clock: any HeraldClock

    func value(forKey key: String) throws -> [UInt8]? {
        try db.query("SELECT value FROM channel_state WHERE channel = \(channel) AND key = \(key)").first?.bytes(
            "value")
    }

    func setValue(_ value: [UInt8]?, forKey key: String) throws {
        if let value {
            try db.run(
                """
                INSERT INTO channel_state(channel, key, value, updated_at)
                VALUES(\(channel), \(key), \(value), \(PostgresStore.ms(clock.now())))
                ON CONFLICT(channel, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """)
        } else {
            try db.run("DELETE FROM channel_state WHERE channel = \(channel) AND key = \(key)")
        }
    }

    /// Atomic across processes: the key's row is created if missing (value `NULL`, read as absent)
    /// and locked with `SELECT … FOR UPDATE` for the whole read-modify-write, so two workers
    /// updating the same key (a Pulse revision, a Telegram flood window) run one after the other.
    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try db.transaction { c in
            try c.run(
                """
                INSERT INTO channel_state(channel, key, value, updated_at)
                VALUES(\(channel), \(key), NULL, \(PostgresStore.ms(clock.now())))
                ON CONFLICT DO NOTHING
                """)
            let current = try c.queryOne(
                "SELECT value FROM channel_state WHERE channel = \(channel) AND key = \(key) FOR UPDATE")?.bytes(
                    "value")
            let (newValue, result) = try body(current)
            if let newValue {
                try c.run(
                    """
                    UPDATE channel_state SET value = \(newValue), updated_at = \(PostgresStore.ms(clock.now()))
                    WHERE channel = \(channel) AND key = \(key)
                    """)
            } else {
                try c.run("DELETE FROM channel_state WHERE channel = \(channel) AND key = \(key)")
            }
            return result
        }
    }
}
