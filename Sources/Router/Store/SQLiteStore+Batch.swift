import ChannelAPI
import Foundation
import HeraldSQLite

// Group commit (issue 17): many notifications or device registrations in one SQLite transaction,
// each item in a savepoint of its own, so one item's failure undoes only that item.
extension SQLiteStore {
    /// See ``HeraldStore/insertNotifications(_:now:)``: the whole batch is one `BEGIN IMMEDIATE …
    /// COMMIT` (one commit for all of it), each item a savepoint inside it, so a duplicate id fails
    /// alone. When the transaction itself fails (begin, commit, or an error that makes SQLite abandon
    /// the transaction), this throws and nothing of the batch is stored.
    public func insertNotifications(_ items: [NotificationInsert], now: Date) throws -> [Result<Void, any Error>] {
        guard !items.isEmpty else { return [] }
        try checkWritable("store a notification")
        let at = SQLiteStore.ms(now)
        return try db.transaction { c in
            var results: [Result<Void, any Error>] = []
            results.reserveCapacity(items.count)
            for item in items {
                // An I/O or disk-full error may make SQLite roll the whole transaction back; later
                // items would then run outside it. Fail the batch instead (nothing of it is kept).
                guard c.isInTransaction else {
                    throw StoreError.writeFailed(
                        operation: "store a batch of notifications",
                        detail: "the transaction was rolled back by an earlier error")
                }
                results.append(Result { try c.transaction { c in try SQLiteStore.insertRows(item, at: at, c) } })
            }
            return results
        }
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
                guard c.isInTransaction else {
                    throw StoreError.writeFailed(
                        operation: "register a batch of devices",
                        detail: "the transaction was rolled back by an earlier error")
                }
                results.append(Result { try c.transaction { c in try SQLiteStore.upsert(device, now: now, c) } })
            }
            return results
        }
    }

    /// The rows of one notification, written inside the caller's transaction: the same statements as
    /// ``insertNotification(_:steps:deliveries:now:)`` (the notification, its deliveries, its
    /// `notification` event-log entry and one `delivery` entry per delivery suppressed at plan time).
    static func insertRows(_ item: NotificationInsert, at: Int64, _ c: SQLiteConnection) throws {
        let n = item.notification
        try SQLiteStore.insertNotificationRow(n, steps: item.steps, at: at, c)
        let deliveries = item.deliveries
        // Multi-row INSERTs, 256 rows a statement.
        var start = 0
        while start < deliveries.count {
            try SQLiteStore.insertDeliveryRows(deliveries[start..<min(deliveries.count, start + 256)], at: at, c)
            start += 256
        }
        try SQLiteStore.appendEvent(
            c, namespace: n.namespace, kind: "notification", notificationId: n.id,
            data: EventLogData.notification(id: n.id, namespace: n.namespace, planned: deliveries.count), at: at)
        for d in deliveries where d.state == .suppressed {
            try SQLiteStore.appendEvent(
                c, namespace: n.namespace, kind: "delivery", notificationId: n.id,
                data: EventLogData.delivery(
                    notificationId: n.id, channel: d.channel, deviceId: d.deviceId, outcome: "suppressed",
                    attempt: 0, reason: d.reason), at: at)
        }
    }
}
