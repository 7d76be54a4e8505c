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
    /// When (`DispatchTime` nanoseconds) a sender's rehearsal of a record last succeeded; 0: never
    /// (``leasedPending(notificationId:step:channel:owner:until:now:after:limit:)``).
    let lastRehearsal = Atomic<UInt64>(0)

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
            sql: StoreSchema.sqlite.devices
                + """
                CREATE TABLE notifications(
                  id TEXT PRIMARY KEY, namespace TEXT NOT NULL, type TEXT NOT NULL, tag TEXT,
                  body TEXT NOT NULL, steps TEXT NOT NULL DEFAULT '[]', created_at INTEGER NOT NULL);
                CREATE INDEX notifications_namespace ON notifications(namespace, created_at);

                """ + StoreSchema.sqlite.deliveryTables),
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
        // The relay history (RelayRequestRecord): bounded, no content.
        SQLiteMigration(
            version: 5,
            sql: """
                CREATE TABLE relay_requests(
                  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, relay TEXT NOT NULL,
                  route TEXT NOT NULL, status INTEGER NOT NULL, pushes TEXT NOT NULL, caller TEXT NOT NULL);
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
            let others = try c.query(StoreSQL.addressHolders(of: device, address: address))
            // Decided before anything is written: a refusal leaves every registration as it was.
            for o in try AddressClaim.moves(of: device, among: others.map { $0.deviceKey() }) {
                moved.append(o.path)
                try c.run(StoreSQL.removeDevice(o))
            }
        }
        let existing = try c.queryOne(
            """
            SELECT created_at FROM devices
            WHERE namespace = \(device.namespace) AND device_id = \(device.deviceId) AND platform = \(device.platform)
            """)
        try c.run(StoreSQL.upsertDevice(device, at: ms(now)))
        return UpsertResult(created: existing == nil, moved: moved)
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int {
        try checkWritable("remove a device")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.withConnection { c in
            try c.run(StoreSQL.removeDevice(namespace: namespace, deviceId: deviceId, platform: platform))
            return c.changes
        }
    }

    /// See ``HeraldStore``.
    public func removeDevice(namespace: String, address: String) throws -> Int {
        try checkWritable("remove a device")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.withConnection { c in
            try c.run(StoreSQL.removeDevice(namespace: namespace, address: address))
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
        let devices = try db.query(StoreSQL.devices(namespace: namespace)).map { try $0.device() }
        deviceCache.withLock { cache in
            if cache.count > 64 { cache.removeAll() }
            cache[namespace] = (dataVersion, generation, devices)
        }
        return devices
    }

    /// See ``HeraldStore``.
    public func device(namespace: String, deviceId: String, platform: String) throws -> Device? {
        try db.queryOne(StoreSQL.device(namespace: namespace, deviceId: deviceId, platform: platform)).map {
            try $0.device()
        }
    }
}
