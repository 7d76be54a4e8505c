import ChannelAPI
import Foundation
import HeraldSQLite
import HeraldSync
import Synchronization

/// How ``SQLiteStore/init(path:access:clock:)`` opens an existing store file.
public enum StoreAccess: Sendable, Equatable {
    /// Read-write when the file and its directory are writable (as `access(2)` judges), read-only
    /// otherwise, so reads still work where writes cannot.
    case automatic
    /// Read-write; the open fails when SQLite cannot write the file.
    case readWrite
    /// Read-only: reads work, every write is refused with ``StoreError/readOnly(path:refused:reason:)``.
    case readOnly
}

/// The embedded default store: one SQLite file in WAL mode.
///
/// Only a missing file is created (atomically: built under a temporary name, then linked into
/// place). An existing file is opened only when it is a Herald store: an empty file, a file that is
/// not SQLite, an SQLite database without Herald's marker and schema, or one with a newer schema
/// version is refused with ``StoreError``, and nothing in it is touched.
public final class SQLiteStore: HeraldStore {
    let db: SQLiteDatabase
    /// The file this store was opened from (`":memory:"` for an in-memory store).
    public let path: String
    /// Why writes are refused, or nil when the store is writable. A store that opened read-only
    /// because its file or directory was not writable (``StoreAccess/automatic``) becomes writable
    /// again by itself: see ``recoverWritable()``.
    public var readOnlyReason: String? { readOnly.withLock { $0.reason } }
    /// How the store was opened: only ``StoreAccess/automatic`` recovers from read-only.
    let openAccess: StoreAccess
    /// The per-connection settings (`store.cache`), run again on a reopened connection.
    let cachePragma: String
    /// The read-only state and the backoff of attempts to reopen read-write.
    private let readOnly: Locked<ReadOnlyState>

    /// Why writes are refused, and when ``recoverWritable()`` next tries to reopen read-write.
    struct ReadOnlyState {
        var reason: String?
        /// No reopen attempt before this time (the store's clock).
        var nextAttempt: Date = .distantPast
        /// The wait after the next failed attempt.
        var backoff: TimeInterval = SQLiteStore.recoveryBackoff.lowerBound
    }

    /// The wait between attempts to reopen a read-only store read-write: doubling from the lower
    /// bound after each failed attempt, up to the upper bound.
    public static let recoveryBackoff: ClosedRange<TimeInterval> = 1...60
    /// The clock for the times the store stamps itself (a channel state's `updated_at`); every
    /// other time is the `now` its caller passes.
    let clock: any HeraldClock
    /// Decoded devices per namespace, valid while neither this store (``deviceGeneration``) nor another
    /// connection (`PRAGMA data_version`) has written since. Planning a 10,000-device fan-out then
    /// costs no JSON decoding.
    private let deviceCache = Locked<[String: (dataVersion: Int64, generation: Int, devices: [Device])]>([:])
    let deviceGeneration = Atomic<Int>(0)

    /// Herald's `PRAGMA application_id` ("HRLD"): marks a file as a Herald store.
    static let applicationID: Int32 = 0x4852_4C44
    /// The page cache a store gets when `store.cache` is not set: 2 MiB, SQLite's own default. A
    /// fan-out streams through the outbox (each row is written once, claimed once, recorded once),
    /// so a larger cache saves little; on the benchmark machine 8 MiB and 1 MiB sent 10,000 APNs
    /// pushes equally fast, and each MiB is resident memory of every `herald send`.
    public static let defaultCacheBytes = 2 << 20

    /// Tables that identify a store made before the application id was set.
    static let coreTables: Set<String> = ["devices", "notifications", "deliveries"]

    /// Opens the store at `path`, creating it only when no file exists; ":memory:" works for tests.
    ///
    /// Throws ``StoreError/notAStore(path:reason:)`` for an existing file that is not a Herald store
    /// (0 bytes, not SQLite, SQLite without Herald's schema), ``StoreError/newerSchema(path:version:supported:)``
    /// for a store from a newer Herald, and ``StoreError/cannotOpen(path:reason:)`` when the file cannot be
    /// opened or created. With ``StoreAccess/automatic`` a store whose file or directory is not writable
    /// opens read-only (see ``readOnlyReason``). `clock` stamps the writes that are not given a time
    /// (channel state); pass the router's clock. `cacheBytes` sizes SQLite's page cache
    /// (`store.cache`).
    public init(
        path: String, access: StoreAccess = .automatic, clock: any HeraldClock = SystemClock(),
        cacheBytes: Int = SQLiteStore.defaultCacheBytes
    ) throws {
        let cachePragma = "PRAGMA cache_size = -\(max(128, cacheBytes / 1024)); PRAGMA temp_store = MEMORY;"
        self.path = path
        self.clock = clock
        self.openAccess = access
        self.cachePragma = cachePragma
        if path.isEmpty || path == ":memory:" {
            db = try SQLiteDatabase(path: path)
            try SQLiteStore.initialize(db)
            readOnly = Locked(ReadOnlyState(reason: access == .readOnly ? "opened read-only" : nil))
            try db.execute(cachePragma)
            return
        }
        if try SQLiteDatabase.inspectFile(atPath: path) == .missing {
            if access == .readOnly {
                throw StoreError.cannotOpen(path: path, reason: "no such file (a read-only open creates nothing)")
            }
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, FileManager.default.fileExists(atPath: parent), !SQLiteStore.isWritable(parent) {
                throw StoreError.cannotOpen(
                    path: path, reason: "no such file, and its directory \(parent) is not writable to create it")
            }
            do {
                _ = try SQLiteDatabase.createAtomically(path: path) { (db) throws(SQLiteError) in
                    try SQLiteStore.initialize(db)
                }
            } catch {
                throw StoreError.cannotOpen(path: path, reason: "cannot create it: \(error.message)")
            }
        }
        switch try SQLiteDatabase.inspectFile(atPath: path) {
        case .missing: throw StoreError.cannotOpen(path: path, reason: "the file disappeared while it was opened")
        case .empty: throw StoreError.notAStore(path: path, reason: "the file is empty (0 bytes)")
        case .notSQLite: throw StoreError.notAStore(path: path, reason: "the file is not an SQLite database")
        case .sqlite: break
        }
        let directory = (path as NSString).deletingLastPathComponent
        let reason = SQLiteStore.readOnlyReason(
            access: access, fileWritable: SQLiteStore.isWritable(path),
            directoryWritable: SQLiteStore.isWritable(directory.isEmpty ? "." : directory),
            directory: directory.isEmpty ? "." : directory)
        do {
            db = try SQLiteDatabase(path: path, mode: reason == nil ? .readWrite : .readOnly)
        } catch {
            throw SQLiteStore.openError(error, path: path)
        }
        readOnly = Locked(ReadOnlyState(reason: reason, nextAttempt: clock.now()))
        do {
            try SQLiteStore.verify(db, path: path)
            if let reason {
                let current = try db.userVersion
                if current < SQLiteStore.newestVersion {
                    throw StoreError.readOnly(
                        path: path,
                        refused: "upgrade the store schema from version \(current) to \(SQLiteStore.newestVersion)",
                        reason: reason)
                }
            } else {
                try db.migrate(SQLiteStore.migrations)
                if try SQLiteStore.storedApplicationID(db) == 0 {
                    try db.execute("PRAGMA application_id = \(SQLiteStore.applicationID)")
                }
            }
            try db.execute(cachePragma)
        } catch let error as SQLiteError {
            db.close()
            throw SQLiteStore.openError(error, path: path)
        } catch {
            db.close()
            throw error
        }
    }

    /// Why an existing store file opens read-only, or nil when it opens read-write (pure: the caller
    /// supplies what `access(2)` said about the file and its directory).
    public static func readOnlyReason(
        access: StoreAccess, fileWritable: Bool, directoryWritable: Bool, directory: String
    ) -> String? {
        switch access {
        case .readOnly: return "opened read-only"
        case .readWrite: return nil
        case .automatic:
            if !fileWritable { return "the file is not writable" }
            if !directoryWritable {
                return "its directory \(directory) is not writable, so SQLite cannot create its -wal and -shm files"
            }
            return nil
        }
    }

    /// The newest schema version this build knows.
    static var newestVersion: Int { migrations.map(\.version).max() ?? 0 }

    /// Sets up a new, empty database: the application id and every migration.
    static func initialize(_ db: SQLiteDatabase) throws(SQLiteError) {
        try db.execute("PRAGMA application_id = \(applicationID)")
        try db.migrate(migrations)
    }

    static func storedApplicationID(_ db: SQLiteDatabase) throws -> Int64 {
        guard case .integer(let id) = try db.queryOne("PRAGMA application_id")?[0] else { return 0 }
        return id
    }

    /// `access(path, W_OK)`; root passes it for any file on a writable file system.
    static func isWritable(_ path: String) -> Bool { access(path, W_OK) == 0 }

    /// Refuses a database that is not a Herald store or is newer than this build.
    static func verify(_ db: SQLiteDatabase, path: String) throws {
        let id = try storedApplicationID(db)
        let version = try db.userVersion
        if id != 0 && id != Int64(applicationID) {
            throw StoreError.notAStore(
                path: path, reason: "it is an SQLite database of another application (application_id \(id))")
        }
        if id == 0 {
            // Stores made before the marker existed are recognised by their schema.
            let tables = Set(
                try db.query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0.string("name") })
            guard version >= 1, coreTables.isSubset(of: tables) else {
                throw StoreError.notAStore(path: path, reason: "it is an SQLite database without Herald's schema")
            }
        }
        if version > newestVersion {
            throw StoreError.newerSchema(path: path, version: version, supported: newestVersion)
        }
    }

    /// Turns an SQLite failure while opening into a store error naming the file.
    static func openError(_ error: SQLiteError, path: String) -> StoreError {
        let primary = error.primaryCode
        if primary == 26 || primary == 11 {  // SQLITE_NOTADB, SQLITE_CORRUPT
            return .notAStore(path: path, reason: "SQLite cannot read it (\(error.message))")
        }
        return .cannotOpen(path: path, reason: error.description)
    }

    /// Throws ``StoreError/readOnly(path:refused:reason:)`` when this store cannot write (after
    /// trying to reopen it read-write, when that is due: ``recoverWritable()``).
    func checkWritable(_ what: String) throws {
        guard readOnlyReason != nil, let reason = recoverWritable() else { return }
        throw StoreError.readOnly(path: path, refused: what, reason: reason)
    }

    /// Reopens a store that opened read-only because its file or its directory was not writable
    /// (``StoreAccess/automatic``: a read-only mount, a full or failing disk remounted read-only, a
    /// permission) once `access(2)` says both are writable again, and returns nil; returns the
    /// reason writes are still refused otherwise. A store opened ``StoreAccess/readOnly`` stays so.
    ///
    /// Cheap when the store is writable or no attempt is due. Attempts are spaced on the store's
    /// clock by ``recoveryBackoff`` (1 s, doubling to 60 s; reset by a recovery); every write to a
    /// read-only store, and `herald serve`'s `/healthz`, call it, so a server recovers by itself.
    /// The reopened connection replaces the old one in place (``SQLiteDatabase/adoptConnection(of:)``),
    /// after the schema is migrated as a read-write open does.
    @discardableResult
    public func recoverWritable() -> String? {
        let now = clock.now()
        let due: String? = readOnly.withLock { s in
            guard let reason = s.reason else { return nil }
            guard openAccess == .automatic, now >= s.nextAttempt else { return reason }
            s.nextAttempt = now.addingTimeInterval(s.backoff)
            s.backoff = min(s.backoff * 2, SQLiteStore.recoveryBackoff.upperBound)
            return "due"
        }
        guard due == "due" else { return due }
        let directory = (path as NSString).deletingLastPathComponent
        let dir = directory.isEmpty ? "." : directory
        if let reason = SQLiteStore.readOnlyReason(
            access: .automatic, fileWritable: SQLiteStore.isWritable(path),
            directoryWritable: SQLiteStore.isWritable(dir), directory: dir)
        {
            return readOnly.withLock { s in
                s.reason = reason
                return reason
            }
        }
        do {
            let fresh = try SQLiteDatabase(path: path, mode: .readWrite)
            do {
                try SQLiteStore.verify(fresh, path: path)
                try fresh.migrate(SQLiteStore.migrations)
                if try SQLiteStore.storedApplicationID(fresh) == 0 {
                    try fresh.execute("PRAGMA application_id = \(SQLiteStore.applicationID)")
                }
                try fresh.execute(cachePragma)
                guard try !fresh.isReadOnly else {
                    throw StoreError.cannotOpen(path: path, reason: "SQLite still opens it read-only")
                }
                try db.adoptConnection(of: fresh)
            } catch {
                fresh.close()
                throw error
            }
        } catch {
            return readOnlyReason
        }
        // Another connection now: the device cache's `data_version` values are not comparable.
        deviceGeneration.add(1, ordering: .relaxed)
        readOnly.withLock { $0 = ReadOnlyState(reason: nil) }
        return nil
    }

    /// Closes the database.
    public func close() { db.close() }

    static let migrations: [SQLiteMigration] = [
        SQLiteMigration(
            version: 1,
            sql: """
                CREATE TABLE devices(
                  namespace TEXT NOT NULL, device_id TEXT NOT NULL, platform TEXT NOT NULL,
                  address TEXT, fields TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                  PRIMARY KEY(namespace, device_id, platform));
                CREATE INDEX devices_address ON devices(address);
                CREATE TABLE notifications(
                  id TEXT PRIMARY KEY, namespace TEXT NOT NULL, type TEXT NOT NULL, tag TEXT,
                  body TEXT NOT NULL, steps TEXT NOT NULL DEFAULT '[]', created_at INTEGER NOT NULL);
                CREATE INDEX notifications_namespace ON notifications(namespace, created_at);
                CREATE TABLE deliveries(
                  id TEXT PRIMARY KEY,
                  notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                  step INTEGER NOT NULL, position INTEGER NOT NULL, channel TEXT NOT NULL,
                  device_id TEXT, platform TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                  next_attempt_at INTEGER, status INTEGER, reason TEXT, provider_id TEXT, details TEXT,
                  lease_owner TEXT, lease_until INTEGER, updated_at INTEGER NOT NULL);
                CREATE INDEX deliveries_notification ON deliveries(notification_id, step, channel);
                CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'retry';
                CREATE TABLE attempts(
                  delivery_id TEXT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
                  attempt INTEGER NOT NULL, at INTEGER NOT NULL, outcome TEXT NOT NULL, status INTEGER, reason TEXT,
                  PRIMARY KEY(delivery_id, attempt));
                CREATE TABLE events(
                  id INTEGER PRIMARY KEY AUTOINCREMENT,
                  notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
                  kind TEXT NOT NULL, action_id TEXT, action_data TEXT, device_id TEXT, at INTEGER NOT NULL);
                CREATE INDEX events_notification ON events(notification_id);
                CREATE TABLE channel_state(
                  channel TEXT NOT NULL, key TEXT NOT NULL, value BLOB, updated_at INTEGER NOT NULL,
                  PRIMARY KEY(channel, key));
                CREATE TABLE badge_tags(
                  namespace TEXT NOT NULL, tag TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY(namespace, tag));
                CREATE TABLE cooldowns(
                  namespace TEXT NOT NULL, step_key TEXT NOT NULL, tag TEXT NOT NULL, at INTEGER NOT NULL,
                  PRIMARY KEY(namespace, step_key, tag));
                """),
        // The event log `herald serve` streams (GET /v1/events): written in the transactions of the
        // changes it reports, so its sequence is the commit order.
        SQLiteMigration(
            version: 2,
            sql: """
                CREATE TABLE event_log(
                  sequence INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, kind TEXT NOT NULL,
                  notification_id TEXT NOT NULL, data TEXT NOT NULL, created_at INTEGER NOT NULL);
                CREATE INDEX event_log_namespace ON event_log(namespace, sequence);
                CREATE INDEX event_log_notification ON event_log(notification_id);
                """),
        // The pending rows in id order: the batched drain's claim (and the search for notifications
        // with pending rows) reads only them instead of every delivery ever stored.
        SQLiteMigration(
            version: 3,
            sql: """
                CREATE INDEX deliveries_pending ON deliveries(id) WHERE state = 'pending';
                """),
        // Ids unique per namespace (NotificationKey): a notification stored under a scoped key keeps
        // the client's id here, found by its partial index; plain keys leave it NULL.
        SQLiteMigration(
            version: 4,
            sql: """
                ALTER TABLE notifications ADD COLUMN public_id TEXT;
                CREATE INDEX notifications_public_id ON notifications(public_id) WHERE public_id IS NOT NULL;
                """),
    ]

    // MARK: Encoding helpers

    /// A date as stored: milliseconds since 1970.
    static func ms(_ d: Date) -> Int64 { d.millisecondsSince1970 }

    // MARK: Devices

    /// See ``HeraldStore``.
    public func upsertDevice(_ device: Device, now: Date) throws -> UpsertResult {
        try checkWritable("register a device")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.transaction { c in try SQLiteStore.upsert(device, now: now, c) }
    }

    /// See ``HeraldStore``: every device in one transaction, so a failure stores none of them.
    public func upsertDevices(_ devices: [Device], now: Date) throws -> [UpsertResult] {
        guard !devices.isEmpty else { return [] }
        try checkWritable("register devices")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.transaction { c in try devices.map { try SQLiteStore.upsert($0, now: now, c) } }
    }

    static func upsert(_ device: Device, now: Date, _ c: SQLiteConnection) throws -> UpsertResult {
        var moved: [String] = []
        if let address = device.address {
            let others = try c.query(
                """
                SELECT namespace, device_id, platform FROM devices WHERE address = \(address)
                  AND NOT (namespace = \(device.namespace) AND device_id = \(device.deviceId) AND platform = \(device.platform))
                """)
            // Decided before anything is written: a refusal leaves every registration as it was.
            let moving = try AddressClaim.moves(
                of: device,
                among: others.map { $0.deviceKey() })
            for o in moving {
                moved.append(o.path)
                try c.run(
                    """
                    DELETE FROM devices
                    WHERE namespace = \(o.namespace) AND device_id = \(o.deviceId) AND platform = \(o.platform)
                    """)
            }
        }
        let existing = try c.queryOne(
            """
            SELECT created_at FROM devices
            WHERE namespace = \(device.namespace) AND device_id = \(device.deviceId) AND platform = \(device.platform)
            """)
        let fields = JSONValue.object(device.fields).canonicalString
        try c.run(
            """
            INSERT INTO devices(namespace, device_id, platform, address, fields, created_at, updated_at)
            VALUES(\(device.namespace), \(device.deviceId), \(device.platform), \(device.address), \(fields),
              \(ms(now)), \(ms(now)))
            ON CONFLICT(namespace, device_id, platform) DO UPDATE SET
              address = excluded.address, fields = excluded.fields, updated_at = excluded.updated_at
            """)
        return UpsertResult(created: existing == nil, moved: moved)
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int {
        try checkWritable("remove a device")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.withConnection { c in
            if let platform {
                try c.run(
                    "DELETE FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId) AND platform = \(platform)"
                )
            } else {
                try c.run("DELETE FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId)")
            }
            return c.changes
        }
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, address: String) throws -> Int {
        try checkWritable("remove a device")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.withConnection { c in
            try c.run("DELETE FROM devices WHERE namespace = \(namespace) AND address = \(address)")
            return c.changes
        }
    }

    /// See ``HeraldStore``.
    public func devices(namespace: String?) throws -> [Device] {
        guard let namespace else {
            return try db.query(SQL(stringLiteral: StoreSQL.allDevices)).map { try $0.device() }
        }
        let generation = deviceGeneration.load(ordering: .sequentiallyConsistent)
        let version = try db.query("PRAGMA data_version").first?[0]
        let dataVersion: Int64 = if case .integer(let v) = version { v } else { -1 }
        if let cached = deviceCache.withLock({ $0[namespace] }), cached.dataVersion == dataVersion,
            cached.generation == generation
        {
            return cached.devices
        }
        let devices = try db.query(
            "SELECT * FROM devices WHERE namespace = \(namespace) ORDER BY device_id, platform"
        ).map { try $0.device() }
        deviceCache.withLock { cache in
            if cache.count > 64 { cache.removeAll() }
            cache[namespace] = (dataVersion, generation, devices)
        }
        return devices
    }

    /// See ``HeraldStore``.
    public func device(namespace: String, deviceId: String, platform: String) throws -> Device? {
        try db.query(
            "SELECT * FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId) AND platform = \(platform)"
        ).first.map { try $0.device() }
    }

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

    /// The namespace of a notification, read inside a transaction (cached per call in `cache`).
    static func namespace(
        of notificationId: String, _ c: SQLiteConnection, cache: inout [String: String]
    ) throws -> String? {
        if let ns = cache[notificationId] { return ns }
        let ns = try c.queryOne("SELECT namespace FROM notifications WHERE id = \(notificationId)")?.string("namespace")
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
        try db.queryOne("SELECT body, steps, created_at FROM notifications WHERE id = \(id)")?.storedNotification(id: id)
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
                let changed = try c.query(
                    """
                    UPDATE deliveries SET state = 'suppressed', reason = \(reason), lease_owner = NULL,
                      lease_until = NULL, updated_at = \(SQLiteStore.ms(now))
                    WHERE id = \(id) AND state = 'pending'
                    RETURNING notification_id, channel, device_id, attempts
                    """)
                for row in changed {
                    guard let nid = row.string("notification_id"), let channel = row.string("channel"),
                        let ns = try SQLiteStore.namespace(of: nid, c, cache: &namespaces)
                    else { continue }
                    try SQLiteStore.appendEvent(
                        c, namespace: ns, kind: "delivery", notificationId: nid,
                        data: EventLogData.delivery(
                            notificationId: nid, channel: channel, deviceId: row.string("device_id"),
                            outcome: "suppressed", attempt: Int(row.int("attempts") ?? 0), reason: reason),
                        at: SQLiteStore.ms(now))
                }
            }
        }
    }

    /// See ``HeraldStore``.
    public func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device] {
        guard !attempts.isEmpty else { return [] }
        try checkWritable("record delivery results")
        defer {
            if attempts.contains(where: { $0.removeDevice != nil }) {
                deviceGeneration.add(1, ordering: .sequentiallyConsistent)
            }
        }
        return try writing("record delivery results") { try recordAttempts(attempts, now: now) }
    }

    private func recordAttempts(_ attempts: [AttemptRecord], now: Date) throws -> [Device] {
        // A chunk's results in three set-based statements (issue 19); a batch naming a delivery twice
        // keeps the row-by-row path, whose later result wins.
        if attempts.count > 1, Set(attempts.map(\.deliveryId)).count == attempts.count {
            return try db.transaction { c in
                // Slices of 1,000 keep each statement well under SQLite's bound-parameter limit.
                try stride(from: 0, to: attempts.count, by: 1_000).flatMap {
                    try SQLiteStore.recordBatch(Array(attempts[$0..<min(attempts.count, $0 + 1_000)]), now: now, c)
                }
            }
        }
        return try db.transaction { c in
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
                    guard let nid = row.string("notification_id"), let channel = row.string("channel"),
                        let ns = try SQLiteStore.namespace(of: nid, c, cache: &namespaces)
                    else { continue }
                    try SQLiteStore.appendEvent(
                        c, namespace: ns, kind: "delivery", notificationId: nid,
                        data: EventLogData.delivery(
                            notificationId: nid, channel: channel, deviceId: row.string("device_id"),
                            outcome: a.state.reportOutcome, attempt: a.attempt, reason: a.reason), at: at)
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

    // MARK: Lifecycle and history

    /// See ``HeraldStore``.
    public func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent {
        try checkWritable("record an event")
        return try db.transaction { c in
            guard
                let namespace = try c.queryOne(
                    "SELECT namespace FROM notifications WHERE id = \(event.notificationId)")?.string("namespace")
            else {
                throw StoreError.unknownNotification(event.notificationId)
            }
            let data = event.actionDataText
            try c.run(
                """
                INSERT INTO events(notification_id, kind, action_id, action_data, device_id, at)
                VALUES(\(event.notificationId), \(event.kind.rawValue), \(event.actionId), \(data), \(event.deviceId),
                  \(SQLiteStore.ms(event.at)))
                """)
            var stored = event
            stored.id = c.lastInsertRowID
            try SQLiteStore.appendEvent(
                c, namespace: namespace, kind: event.kind.rawValue, notificationId: event.notificationId,
                data: EventLogData.lifecycle(stored), at: SQLiteStore.ms(event.at))
            return stored
        }
    }

    /// See ``HeraldStore``.
    public func events(notificationId: String) throws -> [LifecycleEvent] {
        try db.query("SELECT * FROM events WHERE notification_id = \(notificationId) ORDER BY id").map {
            try $0.lifecycleEvent(notificationId: notificationId)
        }
    }

    /// See ``HeraldStore``.
    public func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry] {
        var conditions: [SQL] = []
        if let namespace { conditions.append("namespace = \(namespace)") }
        if let id { conditions.append("id = \(id)") }
        var sql: SQL = "SELECT id FROM notifications"
        if !conditions.isEmpty { sql.append(" WHERE \(conditions.joined(separator: " AND "))") }
        sql.append(" ORDER BY created_at DESC, rowid DESC LIMIT \(limit)")
        return try historyEntries(ids: db.query(sql).compactMap { $0.string("id") })
    }

    /// See ``HeraldStore``: by keyset on (created_at, rowid), the order of the namespace index.
    public func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]? {
        guard
            let anchor = try db.query(
                "SELECT created_at, rowid FROM notifications WHERE id = \(before) AND namespace = \(namespace)"
            ).first, let at = anchor.int("created_at"), let rowid = anchor.int("rowid")
        else { return nil }
        return try historyEntries(
            ids: db.query(
                """
                SELECT id FROM notifications WHERE namespace = \(namespace) AND (created_at, rowid) < (\(at), \(rowid))
                ORDER BY created_at DESC, rowid DESC LIMIT \(max(0, limit))
                """
            ).compactMap { $0.string("id") })
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
            try c.run(
                """
                DELETE FROM notifications WHERE created_at < \(SQLiteStore.ms(date)) AND NOT EXISTS (
                  SELECT 1 FROM deliveries d WHERE d.notification_id = notifications.id AND d.state IN ('pending', 'retry'))
                """)
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
        try db.run(
            """
            INSERT INTO badge_tags(namespace, tag, at) VALUES(\(namespace), \(tag), \(SQLiteStore.ms(now)))
            ON CONFLICT(namespace, tag) DO UPDATE SET at = excluded.at
            """)
    }

    /// See ``HeraldStore``.
    public func pendingTagCount(namespace: String) throws -> Int {
        Int(
            try db.query("SELECT COUNT(*) AS n FROM badge_tags WHERE namespace = \(namespace)").first?.int("n") ?? 0)
    }

    /// See ``HeraldStore``.
    public func clearBadge(namespace: String) throws {
        try checkWritable("clear the badge count")
        try db.run("DELETE FROM badge_tags WHERE namespace = \(namespace)")
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
                let row = try c.queryOne(
                    "SELECT at FROM cooldowns WHERE namespace = \(namespace) AND step_key = \(key) AND tag = \(tag)")
                if let at = row.flatMap({ $0.date("at") }), now.timeIntervalSince(at) < window.timeInterval
                {
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

/// One channel's slice of the `channel_state` table.
struct SQLiteChannelState: ChannelStateStore {
    /// The store: its database, its clock (stamps `updated_at`), and whether it is read-only now.
    let store: SQLiteStore
    let channel: String
    var db: SQLiteDatabase { store.db }
    var clock: any HeraldClock { store.clock }

    func value(forKey key: String) throws -> [UInt8]? {
        try db.query("SELECT value FROM channel_state WHERE channel = \(channel) AND key = \(key)").first?.bytes("value")
    }

    func setValue(_ value: [UInt8]?, forKey key: String) throws {
        try store.checkWritable("save the state of channel \(channel)")
        if let value {
            try db.run(
                """
                INSERT OR REPLACE INTO channel_state(channel, key, value, updated_at)
                VALUES(\(channel), \(key), \(value), \(SQLiteStore.ms(clock.now())))
                """)
        } else {
            try db.run("DELETE FROM channel_state WHERE channel = \(channel) AND key = \(key)")
        }
    }

    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try store.checkWritable("save the state of channel \(channel)")
        return try db.transaction { c in
            let current = try c.queryOne("SELECT value FROM channel_state WHERE channel = \(channel) AND key = \(key)")?
                .bytes("value")
            let (newValue, result) = try body(current)
            if let newValue {
                try c.run(
                    """
                    INSERT OR REPLACE INTO channel_state(channel, key, value, updated_at)
                    VALUES(\(channel), \(key), \(newValue), \(SQLiteStore.ms(clock.now())))
                    """)
            } else {
                try c.run("DELETE FROM channel_state WHERE channel = \(channel) AND key = \(key)")
            }
            return result
        }
    }
}
