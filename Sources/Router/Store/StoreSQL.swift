/// The statements every SQL store runs with the same text and no bound values (each store makes
/// its own statement type from them: `SQL(stringLiteral:)`, `PostgresSQL(stringLiteral:)`). Their
/// rows are read by ``StoreRows``.
enum StoreSQL {
    /// `p` and `r`: the pending and retry counts, each from its partial index.
    static let outstandingCounts: StaticString = """
        SELECT (SELECT COUNT(*) FROM deliveries WHERE state = 'pending') AS p,
          (SELECT COUNT(*) FROM deliveries WHERE state = 'retry') AS r
        """

    /// `namespace, state, c`: the outstanding rows only, one `state =` per part so each uses its
    /// partial index.
    static let outstandingByNamespace: StaticString = """
        SELECT n.namespace AS namespace, 'pending' AS state, COUNT(*) AS c
        FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE d.state = 'pending'
        GROUP BY n.namespace
        UNION ALL
        SELECT n.namespace AS namespace, 'retry' AS state, COUNT(*) AS c
        FROM deliveries d JOIN notifications n ON n.id = d.notification_id WHERE d.state = 'retry'
        GROUP BY n.namespace
        """

    /// `state, n`: every delivery counted by state.
    static let deliveryCounts: StaticString = "SELECT state, COUNT(*) AS n FROM deliveries GROUP BY state"

    /// `lease_owner`: every owner holding a lease.
    static let leaseOwners: StaticString =
        "SELECT DISTINCT lease_owner FROM deliveries WHERE lease_owner IS NOT NULL"

    /// `t`: the earliest time a retry is due.
    static let nextDueTime: StaticString = "SELECT MIN(next_attempt_at) AS t FROM deliveries WHERE state = 'retry'"

    /// `s`: the event log's last sequence number.
    static let lastEventSequence: StaticString = "SELECT MAX(sequence) AS s FROM event_log"

    /// `platform, n`: every device counted by platform.
    static let platformCounts: StaticString = "SELECT platform, COUNT(*) AS n FROM devices GROUP BY platform"

    /// `*`: every device, in key order.
    static let allDevices: StaticString = "SELECT * FROM devices ORDER BY namespace, device_id, platform"
}
