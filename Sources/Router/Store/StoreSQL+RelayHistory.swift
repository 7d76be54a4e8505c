import ChannelAPI
import Foundation
import HeraldSQL

/// The relay history's statements (``RelayRequestRecord``), the same text on both stores.
extension StoreSQL {
    /// Inserts one relay request.
    static func insertRelayRequest<D>(_ r: RelayRequestRecord) -> SQLStatement<D> {
        """
        INSERT INTO relay_requests(at, relay, route, status, pushes, caller)
        VALUES(\(r.at.millisecondsSince1970), \(r.relay), \(r.route), \(Int64(r.status)), \(r.pushesText), \(r.caller))
        """
    }

    /// Keeps the newest `keep` rows (by id, the insertion order).
    static func pruneRelayRequests<D>(keep: Int) -> SQLStatement<D> {
        "DELETE FROM relay_requests WHERE id <= (SELECT MAX(id) FROM relay_requests) - \(Int64(max(0, keep)))"
    }

    /// `*`: the newest relay requests, of one protocol when given.
    static func relayRequests<D>(relay: String?, limit: Int) -> SQLStatement<D> {
        guard let relay else { return "SELECT * FROM relay_requests ORDER BY id DESC LIMIT \(Int64(max(0, limit)))" }
        return "SELECT * FROM relay_requests WHERE relay = \(relay) ORDER BY id DESC LIMIT \(Int64(max(0, limit)))"
    }

    /// `relay, status, pushes, n`: the kept relay requests counted.
    static let relayRequestTallies: StaticString =
        "SELECT relay, status, pushes, COUNT(*) AS n FROM relay_requests GROUP BY relay, status, pushes"
}

extension SQLRow {
    /// A `relay_requests` row.
    func relayRequest() -> RelayRequestRecord {
        RelayRequestRecord(
            at: date("at") ?? Date(timeIntervalSince1970: 0), relay: string("relay") ?? "",
            route: string("route") ?? "",
            status: Int(int("status") ?? 0), pushes: RelayRequestRecord.pushes(fromText: string("pushes") ?? "{}"),
            caller: string("caller") ?? "")
    }

    /// A row of ``StoreSQL/relayRequestTallies``.
    var relayTallyRow: (relay: String, status: Int, pushes: String, count: Int) {
        (string("relay") ?? "", Int(int("status") ?? 0), string("pushes") ?? "{}", Int(int("n") ?? 0))
    }
}
