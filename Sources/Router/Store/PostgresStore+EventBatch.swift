import ChannelAPI
import Foundation
import HeraldPostgres

// Group commit of lifecycle events (issue 35) on PostgreSQL: one transaction, a savepoint per event.
extension PostgresStore {
    /// See ``HeraldStore/recordEvents(_:)``: one transaction for the whole batch, each event a
    /// savepoint inside it, so an unknown notification fails alone.
    public func recordEvents(_ events: [LifecycleEvent]) throws -> [Result<LifecycleEvent, any Error>] {
        guard !events.isEmpty else { return [] }
        return try call {
            try db.transaction { c in
                events.map { event in Result { try c.transaction { c in try Self.insertEvent(event, c) } } }
            }
        }
    }
}
