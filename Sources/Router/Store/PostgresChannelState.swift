import ChannelAPI
import Foundation
import HeraldPostgres

/// One channel's slice of `channel_state`.
struct PostgresChannelState: ChannelStateStore {
    let db: PostgresDatabase
    let channel: String
    let clock: any HeraldClock

    func value(forKey key: String) throws -> [UInt8]? {
        try db.queryOne(StoreSQL.channelState(channel, key: key))?.bytes("value")
    }

    func setValue(_ value: [UInt8]?, forKey key: String) throws {
        if let value {
            try db.run(
                """
                INSERT INTO channel_state(channel, key, value, updated_at)
                VALUES(\(channel), \(key), \(value), \(PostgresStore.ms(clock.now())))
                ON CONFLICT(channel, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """)
        } else {
            try db.run(StoreSQL.removeChannelState(channel, key: key))
        }
    }

    /// Atomic across processes: the key's row is created if missing (value `NULL`, read as absent)
    /// and locked with `SELECT … FOR UPDATE` for the whole read-modify-write, so two workers
    /// updating the same key (a Pulse revision, a Telegram flood window) run one after the other.
    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try update(key, reading: []) { current, _ in try body(current) }
    }

    /// The others are read after `key`'s row is locked, in its transaction (plain reads: a change to
    /// them committed by another process meanwhile is seen by the next update).
    func update<T>(
        _ key: String, reading others: [String],
        _ body: ([UInt8]?, [[UInt8]?]) throws -> (newValue: [UInt8]?, result: T)
    ) throws -> T {
        try db.transaction { c in
            try c.run(
                """
                INSERT INTO channel_state(channel, key, value, updated_at)
                VALUES(\(channel), \(key), NULL, \(PostgresStore.ms(clock.now())))
                ON CONFLICT DO NOTHING
                """)
            let current = try c.queryOne(
                "\(StoreSQL.channelState(channel, key: key) as PostgresSQL) FOR UPDATE")?.bytes("value")
            let values = try others.map { try c.queryOne(StoreSQL.channelState(channel, key: $0))?.bytes("value") }
            let (newValue, result) = try body(current, values)
            if let newValue {
                try c.run(
                    """
                    UPDATE channel_state SET value = \(newValue), updated_at = \(PostgresStore.ms(clock.now()))
                    WHERE channel = \(channel) AND key = \(key)
                    """)
            } else {
                try c.run(StoreSQL.removeChannelState(channel, key: key))
            }
            return result
        }
    }
}
