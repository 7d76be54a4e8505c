import ChannelAPI
import Foundation
import HeraldSQLite

// MARK: pg

extension SQLiteStore {
    /// See ``HeraldStore``: one `UPDATE … RETURNING` of up to `limit` pending rows in id order, in
    /// the claim's transaction with the rehearsal of their record (as every claim here), skipping
    /// rows of a notification that still has pending rows in an earlier step and rows leased by
    /// anyone (this owner included) whose lease has not expired.
    public func claimPendingBatch(owner: String, until: Date, now: Date, limit: Int) throws -> PendingBatch {
        try checkWritable("claim deliveries")
        let claimed: [DeliveryRecord] = try writing("claim deliveries") {
            try db.transaction { c in
                let rows = try c.query(
                    """
                    UPDATE deliveries SET lease_owner = \(owner), lease_until = \(SQLiteStore.ms(until))
                    WHERE id IN (
                      SELECT p.id FROM deliveries p
                      WHERE p.state = 'pending' AND (p.lease_owner IS NULL OR p.lease_until < \(SQLiteStore.ms(now)))
                        AND (p.step = 0 OR NOT EXISTS (
                          SELECT 1 FROM deliveries e WHERE e.notification_id = p.notification_id
                            AND e.state = 'pending' AND e.step < p.step))
                      ORDER BY p.id LIMIT \(max(1, limit)))
                    RETURNING *
                    """
                ).map { try $0.delivery() }
                try SQLiteStore.rehearseRecord(rows.map(\.id), until: until, now: now, c)
                return rows
            }
        }
        var notifications: [String: StoredNotification] = [:]
        for record in claimed where notifications[record.notificationId] == nil {
            notifications[record.notificationId] = try notification(id: record.notificationId)
        }
        return PendingBatch(deliveries: claimed.sorted { $0.id < $1.id }, notifications: notifications)
    }
}
