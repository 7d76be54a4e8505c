/// The tables of schema version 1 that both backends create alike, written once: a backend gives
/// only the column types its dialect spells differently. Each backend's first migration is its
/// ``devices``, its own `notifications` table, then ``deliveryTables``.
struct StoreSchema {
    /// A time column (milliseconds since 1970): `INTEGER` in SQLite, `BIGINT` in PostgreSQL.
    var time: String
    /// A binary column: `BLOB` in SQLite, `BYTEA` in PostgreSQL.
    var bytes: String
    /// An auto-numbered primary key column.
    var serialKey: String

    /// SQLite's types.
    static let sqlite = StoreSchema(time: "INTEGER", bytes: "BLOB", serialKey: "INTEGER PRIMARY KEY AUTOINCREMENT")
    /// PostgreSQL's types.
    static let postgres = StoreSchema(time: "BIGINT", bytes: "BYTEA", serialKey: "BIGSERIAL PRIMARY KEY")

    /// The `devices` table and its address index.
    var devices: String {
        """
        CREATE TABLE devices(
          namespace TEXT NOT NULL, device_id TEXT NOT NULL, platform TEXT NOT NULL,
          address TEXT, fields TEXT NOT NULL, created_at \(time) NOT NULL, updated_at \(time) NOT NULL,
          PRIMARY KEY(namespace, device_id, platform));
        CREATE INDEX devices_address ON devices(address);

        """
    }

    /// `deliveries` with its notification and retry indexes, `attempts`, `events`, `channel_state`,
    /// `badge_tags` and `cooldowns`.
    var deliveryTables: String {
        """
        CREATE TABLE deliveries(
          id TEXT PRIMARY KEY,
          notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
          step INTEGER NOT NULL, position INTEGER NOT NULL, channel TEXT NOT NULL,
          device_id TEXT, platform TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
          next_attempt_at \(time), status INTEGER, reason TEXT, provider_id TEXT, details TEXT,
          lease_owner TEXT, lease_until \(time), updated_at \(time) NOT NULL);
        CREATE INDEX deliveries_notification ON deliveries(notification_id, step, channel);
        CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'retry';
        CREATE TABLE attempts(
          delivery_id TEXT NOT NULL REFERENCES deliveries(id) ON DELETE CASCADE,
          attempt INTEGER NOT NULL, at \(time) NOT NULL, outcome TEXT NOT NULL, status INTEGER, reason TEXT,
          PRIMARY KEY(delivery_id, attempt));
        CREATE TABLE events(
          id \(serialKey),
          notification_id TEXT NOT NULL REFERENCES notifications(id) ON DELETE CASCADE,
          kind TEXT NOT NULL, action_id TEXT, action_data TEXT, device_id TEXT, at \(time) NOT NULL);
        CREATE INDEX events_notification ON events(notification_id);
        CREATE TABLE channel_state(
          channel TEXT NOT NULL, key TEXT NOT NULL, value \(bytes), updated_at \(time) NOT NULL,
          PRIMARY KEY(channel, key));
        CREATE TABLE badge_tags(
          namespace TEXT NOT NULL, tag TEXT NOT NULL, at \(time) NOT NULL, PRIMARY KEY(namespace, tag));
        CREATE TABLE cooldowns(
          namespace TEXT NOT NULL, step_key TEXT NOT NULL, tag TEXT NOT NULL, at \(time) NOT NULL,
          PRIMARY KEY(namespace, step_key, tag));

        """
    }
}
