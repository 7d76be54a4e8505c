import Foundation
import HeraldSQLite

/// The relay history on SQLite (``RelayRequestRecord``).
extension SQLiteStore {
    /// See ``HeraldStore``.
    public func recordRelayRequests(_ records: [RelayRequestRecord], keep: Int) throws {
        guard !records.isEmpty else { return }
        try checkWritable("record relay requests")
        try db.transaction { c in
            for r in records { try c.run(StoreSQL.insertRelayRequest(r) as SQL) }
            try c.run(StoreSQL.pruneRelayRequests(keep: keep) as SQL)
        }
    }

    /// See ``HeraldStore``.
    public func relayRequests(relay: String?, limit: Int) throws -> [RelayRequestRecord] {
        try db.query(StoreSQL.relayRequests(relay: relay, limit: limit) as SQL).map { $0.relayRequest() }
    }

    /// See ``HeraldStore``.
    public func relayRequestTallies() throws -> [RelayRequestTally] {
        RelayRequestTally.summing(try db.query(SQL(stringLiteral: StoreSQL.relayRequestTallies)).map(\.relayTallyRow))
    }
}
