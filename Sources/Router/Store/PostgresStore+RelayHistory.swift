import Foundation
import HeraldPostgres

/// The relay history on PostgreSQL (``RelayRequestRecord``): every `herald serve` on the database
/// writes to one table, so the console shows every process's traffic.
extension PostgresStore {
    /// See ``HeraldStore``.
    public func recordRelayRequests(_ records: [RelayRequestRecord], keep: Int) throws {
        guard !records.isEmpty else { return }
        try call {
            try db.transaction { c in
                for r in records { try c.run(StoreSQL.insertRelayRequest(r) as PostgresSQL) }
                try c.run(StoreSQL.pruneRelayRequests(keep: keep) as PostgresSQL)
            }
        }
    }

    /// See ``HeraldStore``.
    public func relayRequests(relay: String?, limit: Int) throws -> [RelayRequestRecord] {
        try call {
            try db.query(StoreSQL.relayRequests(relay: relay, limit: limit) as PostgresSQL).map { $0.relayRequest() }
        }
    }

    /// See ``HeraldStore``.
    public func relayRequestTallies() throws -> [RelayRequestTally] {
        let rows = try call {
            try db.query(PostgresSQL(stringLiteral: StoreSQL.relayRequestTallies)).map(\.relayTallyRow)
        }
        return RelayRequestTally.summing(rows)
    }
}
