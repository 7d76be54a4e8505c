import ChannelAPI
import Foundation
import HeraldSQLite

// Group commit of lifecycle events (issue 35: the confirmations of local pushes arrive as fast as
// the notifications are sent): many events in one SQLite transaction, each in a savepoint of its own.
extension SQLiteStore {
    /// See ``HeraldStore/recordEvents(_:)``: one `BEGIN IMMEDIATE … COMMIT` for the whole batch, each
    /// event a savepoint inside it, so an unknown notification fails alone. When the transaction
    /// itself fails, this throws and nothing of the batch is stored.
    public func recordEvents(_ events: [LifecycleEvent]) throws -> [Result<LifecycleEvent, any Error>] {
        guard !events.isEmpty else { return [] }
        try checkWritable("record an event")
        return try db.transaction { c in
            var results: [Result<LifecycleEvent, any Error>] = []
            results.reserveCapacity(events.count)
            for event in events {
                try SQLiteStore.requireTransaction(c, after: results, "record a batch of events")
                results.append(Result { try c.transaction { c in try SQLiteStore.insertEvent(event, c) } })
            }
            try SQLiteStore.requireTransaction(c, after: results, "record a batch of events")
            return results
        }
    }
}
