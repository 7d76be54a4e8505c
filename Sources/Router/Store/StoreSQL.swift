import ChannelAPI
import HeraldSQL

/// The statements every SQL store runs with the same text: those without values as literals (each
/// store makes its own statement from them: `SQL(stringLiteral:)`, `PostgresSQL(stringLiteral:)`),
/// the others written once for any ``SQLDialect`` (the store's statement type picks it). A store
/// appends what only its database has (`FOR UPDATE`, `RETURNING`). Their rows are read by
/// ``StoreRows`` and the decoders of ``SQLRow``.
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

    // MARK: Devices

    /// `*`: one device.
    static func device<D>(namespace: String, deviceId: String, platform: String) -> SQLStatement<D> {
        "SELECT * FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId) AND platform = \(platform)"
    }

    /// `*`: the devices of a namespace, in key order.
    static func devices<D>(namespace: String) -> SQLStatement<D> {
        "SELECT * FROM devices WHERE namespace = \(namespace) ORDER BY device_id, platform"
    }

    /// `platform, n`: the devices of a namespace counted by platform.
    static func platformCounts<D>(namespace: String) -> SQLStatement<D> {
        "SELECT platform, COUNT(*) AS n FROM devices WHERE namespace = \(namespace) GROUP BY platform"
    }

    /// Removes one device by id (on one platform, or all of them when `platform` is nil).
    static func removeDevice<D>(namespace: String, deviceId: String, platform: String?) -> SQLStatement<D> {
        guard let platform else {
            return "DELETE FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId)"
        }
        return
            "DELETE FROM devices WHERE namespace = \(namespace) AND device_id = \(deviceId) AND platform = \(platform)"
    }

    /// Removes the devices of a namespace at an address.
    static func removeDevice<D>(namespace: String, address: String) -> SQLStatement<D> {
        "DELETE FROM devices WHERE namespace = \(namespace) AND address = \(address)"
    }

    /// `namespace, device_id, platform`: the other registrations holding `device`'s address.
    static func addressHolders<D>(of device: Device, address: String) -> SQLStatement<D> {
        """
        SELECT namespace, device_id, platform FROM devices WHERE address = \(address)
          AND NOT (namespace = \(device.namespace) AND device_id = \(device.deviceId) AND platform = \(device.platform))
        """
    }

    /// Removes one registration by key.
    static func removeDevice<D>(_ key: DeviceKey) -> SQLStatement<D> {
        """
        DELETE FROM devices
        WHERE namespace = \(key.namespace) AND device_id = \(key.deviceId) AND platform = \(key.platform)
        """
    }

    /// Inserts or updates a registration (its `created_at` kept).
    static func upsertDevice<D>(_ device: Device, at: Int64) -> SQLStatement<D> {
        """
        INSERT INTO devices(namespace, device_id, platform, address, fields, created_at, updated_at)
        VALUES(\(device.namespace), \(device.deviceId), \(device.platform), \(device.address),
          \(JSONValue.object(device.fields).canonicalString), \(at), \(at))
        ON CONFLICT(namespace, device_id, platform) DO UPDATE SET
          address = excluded.address, fields = excluded.fields, updated_at = excluded.updated_at
        """
    }

    // MARK: Notifications and events

    /// Inserts a notification's own row.
    static func insertNotification<D>(_ n: HeraldNotification, steps: [StepRule], at: Int64) -> SQLStatement<D> {
        """
        INSERT INTO notifications(id, namespace, type, tag, body, steps, created_at, public_id)
        VALUES(\(n.id), \(n.namespace), \(n.type), \(n.collapseTag), \(n.json.canonicalString),
          \(StepRule.storedText(steps)), \(at), \(NotificationKey.isScoped(n.id) ? NotificationKey.publicID(of: n.id) : nil))
        """
    }

    /// `body, steps, created_at`: one notification.
    static func notification<D>(id: String) -> SQLStatement<D> {
        "SELECT body, steps, created_at FROM notifications WHERE id = \(id)"
    }

    /// `namespace`: the namespace of one notification.
    static func namespace<D>(of notificationId: String) -> SQLStatement<D> {
        "SELECT namespace FROM notifications WHERE id = \(notificationId)"
    }

    /// `id, namespace`: the notifications a client's id names (the plain key by the primary key,
    /// scoped ones by their partial index).
    static func notificationKeys<D>(publicID: String) -> SQLStatement<D> {
        """
        SELECT id, namespace FROM notifications WHERE id = \(publicID)
        UNION ALL SELECT id, namespace FROM notifications WHERE public_id = \(publicID)
        """
    }

    /// `*`: the lifecycle events of one notification, in order.
    static func events<D>(notificationId: String) -> SQLStatement<D> {
        "SELECT * FROM events WHERE notification_id = \(notificationId) ORDER BY id"
    }

    /// Inserts a lifecycle event.
    static func insertEvent<D>(_ event: LifecycleEvent) -> SQLStatement<D> {
        """
        INSERT INTO events(notification_id, kind, action_id, action_data, device_id, at)
        VALUES(\(event.notificationId), \(event.kind.rawValue), \(event.actionId), \(event.actionDataText),
          \(event.deviceId), \(event.at.millisecondsSince1970))
        """
    }

    /// `id`: the newest notifications, of a namespace and/or an id when given, newest first
    /// (`tiebreak` orders those accepted in the same millisecond: SQLite's `rowid`, PostgreSQL's `ord`).
    static func historyIDs<D>(namespace: String?, id: String?, limit: Int, tiebreak: SQLStatement<D>)
        -> SQLStatement<D>
    {
        var conditions: [SQLStatement<D>] = []
        if let namespace { conditions.append("namespace = \(namespace)") }
        if let id { conditions.append("id = \(id)") }
        var sql: SQLStatement<D> = "SELECT id FROM notifications"
        if !conditions.isEmpty { sql.append(" WHERE \(conditions.joined(separator: " AND "))") }
        sql.append(" ORDER BY created_at DESC, \(tiebreak) DESC LIMIT \(limit)")
        return sql
    }

    // MARK: Badges and channel state

    /// Adds a tag to a namespace's badge (or refreshes its time).
    static func addBadgeTag<D>(namespace: String, tag: String, at: Int64) -> SQLStatement<D> {
        """
        INSERT INTO badge_tags(namespace, tag, at) VALUES(\(namespace), \(tag), \(at))
        ON CONFLICT(namespace, tag) DO UPDATE SET at = excluded.at
        """
    }

    /// `n`: the tags on a namespace's badge.
    static func pendingTagCount<D>(namespace: String) -> SQLStatement<D> {
        "SELECT COUNT(*) AS n FROM badge_tags WHERE namespace = \(namespace)"
    }

    /// Clears a namespace's badge.
    static func clearBadge<D>(namespace: String) -> SQLStatement<D> {
        "DELETE FROM badge_tags WHERE namespace = \(namespace)"
    }

    /// `value`: one channel-state value.
    static func channelState<D>(_ channel: String, key: String) -> SQLStatement<D> {
        "SELECT value FROM channel_state WHERE channel = \(channel) AND key = \(key)"
    }

    /// Removes one channel-state value.
    static func removeChannelState<D>(_ channel: String, key: String) -> SQLStatement<D> {
        "DELETE FROM channel_state WHERE channel = \(channel) AND key = \(key)"
    }

    /// Removes the notifications accepted before `at` that have no outstanding delivery (their
    /// deliveries, attempts and events go with them).
    static func purgeNotifications<D>(before at: Int64) -> SQLStatement<D> {
        """
        DELETE FROM notifications WHERE created_at < \(at) AND NOT EXISTS (
          SELECT 1 FROM deliveries d WHERE d.notification_id = notifications.id AND d.state IN ('pending', 'retry'))
        """
    }

    /// `at`: when a cooldown key last fired.
    static func cooldown<D>(namespace: String, key: String, tag: String) -> SQLStatement<D> {
        "SELECT at FROM cooldowns WHERE namespace = \(namespace) AND step_key = \(key) AND tag = \(tag)"
    }

    /// `created_at, k`: where a notification of a namespace sits in the history order (`k` its
    /// `tiebreak`, see ``historyIDs(namespace:id:limit:tiebreak:)``).
    static func historyAnchor<D>(namespace: String, id: String, tiebreak: SQLStatement<D>) -> SQLStatement<D> {
        "SELECT created_at, \(tiebreak) AS k FROM notifications WHERE id = \(id) AND namespace = \(namespace)"
    }

    /// `id`: the notifications of a namespace after an anchor (``historyAnchor(namespace:id:tiebreak:)``)
    /// in the history order, by keyset on `(created_at, tiebreak)`.
    static func historyIDs<D>(
        namespace: String, after anchor: (at: Int64, k: Int64), limit: Int, tiebreak: SQLStatement<D>
    )
        -> SQLStatement<D>
    {
        """
        SELECT id FROM notifications WHERE namespace = \(namespace) AND (created_at, \(tiebreak)) < (\(anchor.at), \(anchor.k))
        ORDER BY created_at DESC, \(tiebreak) DESC LIMIT \(max(0, limit))
        """
    }
}
