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
    let lastNotify = Atomic<Int64>(0)
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
        StoreSchema.postgres.devices
            + """
            CREATE TABLE notifications(
              id TEXT PRIMARY KEY, namespace TEXT NOT NULL, type TEXT NOT NULL, tag TEXT,
              body TEXT NOT NULL, steps TEXT NOT NULL DEFAULT '[]', created_at BIGINT NOT NULL,
              ord BIGSERIAL NOT NULL);
            CREATE INDEX notifications_namespace ON notifications(namespace, created_at);
            CREATE INDEX notifications_created ON notifications(created_at);

            """ + StoreSchema.postgres.deliveryTables
                + """
                CREATE INDEX deliveries_pending ON deliveries(notification_id) WHERE state = 'pending';
                CREATE INDEX deliveries_lease_owner ON deliveries(lease_owner) WHERE lease_owner IS NOT NULL;
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
        // 4: the relay history (RelayRequestRecord): bounded, no content.
        """
        CREATE TABLE relay_requests(
          id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, relay TEXT NOT NULL,
          route TEXT NOT NULL, status INTEGER NOT NULL, pushes TEXT NOT NULL, caller TEXT NOT NULL);
        """,
        // 5: local push across processes (PostgresLocalRelay): which process holds a device's stream.
        """
        CREATE TABLE local_streams(
          namespace TEXT NOT NULL, device_id TEXT NOT NULL, holder TEXT NOT NULL, heartbeat_at BIGINT NOT NULL,
          PRIMARY KEY(namespace, device_id, holder));
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
    func writing<T>(_ operation: String, _ body: () throws -> T) throws -> T {
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
            let others = try c.query("\(StoreSQL.addressHolders(of: device, address: address)) FOR UPDATE")
            for o in try AddressClaim.moves(of: device, among: others.map { $0.deviceKey() }) {
                moved.append(o.path)
                try c.run(StoreSQL.removeDevice(o))
            }
            moved.sort()
        }
        let row = try c.queryOne("\(StoreSQL.upsertDevice(device, at: ms(now))) RETURNING (xmax = 0) AS created")
        return UpsertResult(created: row?.bool("created") ?? false, moved: moved)
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int {
        try call {
            try db.run(StoreSQL.removeDevice(namespace: namespace, deviceId: deviceId, platform: platform))
        }
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, address: String) throws -> Int {
        try call { try db.run(StoreSQL.removeDevice(namespace: namespace, address: address)) }
    }

    /// See ``HeraldStore``.
    public func devices(namespace: String?) throws -> [Device] {
        try call {
            guard let namespace else {
                return try db.query(PostgresSQL(stringLiteral: StoreSQL.allDevices)).map { try $0.device() }
            }
            return try db.query(StoreSQL.devices(namespace: namespace)).map { try $0.device() }
        }
    }

    /// See ``HeraldStore``.
    public func device(namespace: String, deviceId: String, platform: String) throws -> Device? {
        try call {
            try db.queryOne(StoreSQL.device(namespace: namespace, deviceId: deviceId, platform: platform)).map {
                try $0.device()
            }
        }
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
