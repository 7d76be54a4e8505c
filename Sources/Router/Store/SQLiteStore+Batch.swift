import ChannelAPI
import Foundation
import HeraldSQLite

// Group commit (issue 17): many notifications or device registrations in one SQLite transaction,
// each item in a savepoint of its own, so one item's failure undoes only that item.
extension SQLiteStore {
    /// See ``HeraldStore/insertNotifications(_:now:suppressed:)``: the whole batch is one `BEGIN
    /// IMMEDIATE … COMMIT` (one commit for all of it), each item a savepoint inside it, so a duplicate
    /// id fails alone; an item's groups are expanded as ``insertNotification(_:steps:groups:now:suppressed:)``
    /// does. When the transaction itself fails (begin, commit, or an error that makes SQLite abandon
    /// the transaction), this throws and nothing of the batch is stored.
    public func insertNotifications(
        _ items: [NotificationInsert], now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> [Result<Int, any Error>] {
        guard !items.isEmpty else { return [] }
        try checkWritable("store a notification")
        let at = SQLiteStore.ms(now)
        let (results, suppressedRows) = try db.transaction { c in
            var results: [Result<Int, any Error>] = []
            var suppressedRows: [DeliveryRecord] = []
            results.reserveCapacity(items.count)
            for item in items {
                // An I/O or disk-full error may make SQLite roll the whole transaction back; later
                // items would then run outside it. Fail the batch instead (nothing of it is kept),
                // with the error that did it (a full disk is a 503, not a failed COMMIT's 500).
                try SQLiteStore.requireTransaction(c, after: results, "store a batch of notifications")
                let stored = Result { try c.transaction { c in try SQLiteStore.insertItem(item, at: at, now: now, c) } }
                if case .success(let s) = stored { suppressedRows += s.suppressed }
                results.append(stored.map(\.rows))
            }
            try SQLiteStore.requireTransaction(c, after: results, "store a batch of notifications")
            return (results, suppressedRows)
        }
        for r in suppressedRows { suppressed(r) }
        return results
    }

    /// See ``HeraldStore/upsertDevicesIndividually(_:now:)``: one transaction, a savepoint per device.
    public func upsertDevicesIndividually(_ devices: [Device], now: Date) throws -> [Result<UpsertResult, any Error>] {
        guard !devices.isEmpty else { return [] }
        try checkWritable("register a device")
        defer { deviceGeneration.add(1, ordering: .sequentiallyConsistent) }
        return try db.transaction { c in
            var results: [Result<UpsertResult, any Error>] = []
            results.reserveCapacity(devices.count)
            for device in devices {
                try SQLiteStore.requireTransaction(c, after: results, "register a batch of devices")
                results.append(Result { try c.transaction { c in try SQLiteStore.upsert(device, now: now, c) } })
            }
            try SQLiteStore.requireTransaction(c, after: results, "register a batch of devices")
            return results
        }
    }

    /// Throws when SQLite has rolled the batch's transaction back (an I/O or disk-full error of an
    /// item may): the error of the last item, which did it, or ``StoreError/writeFailed(operation:detail:)``.
    static func requireTransaction<T>(_ c: SQLiteConnection, after results: [Result<T, any Error>], _ operation: String)
        throws
    {
        guard !c.isInTransaction else { return }
        if case .failure(let error)? = results.last { throw error }
        throw StoreError.writeFailed(
            operation: operation, detail: "the transaction was rolled back by an earlier error")
    }
}
