/// The relay history's defaults for stores without it (test doubles): nothing is kept. ``SQLiteStore``
/// and ``PostgresStore`` keep it in their `relay_requests` table.
extension HeraldStore {
    /// See ``HeraldStore``: nothing is kept.
    public func recordRelayRequests(_ records: [RelayRequestRecord], keep: Int) throws {}

    /// See ``HeraldStore``: none.
    public func relayRequests(relay: String?, limit: Int) throws -> [RelayRequestRecord] { [] }

    /// See ``HeraldStore``: none.
    public func relayRequestTallies() throws -> [RelayRequestTally] { [] }
}
