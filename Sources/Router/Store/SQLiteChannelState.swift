import ChannelAPI
import Foundation
import HeraldSQLite

/// One channel's slice of the `channel_state` table.
struct SQLiteChannelState: ChannelStateStore {
    /// The store: its database, its clock (stamps `updated_at`), and whether it is read-only now.
    let store: SQLiteStore
    let channel: String
    var db: SQLiteDatabase { store.db }
    var clock: any HeraldClock { store.clock }

    func value(forKey key: String) throws -> [UInt8]? {
        try db.queryOne(StoreSQL.channelState(channel, key: key))?.bytes("value")
    }

    func setValue(_ value: [UInt8]?, forKey key: String) throws {
        try store.checkWritable("save the state of channel \(channel)")
        if let value {
            try db.run(
                """
                INSERT OR REPLACE INTO channel_state(channel, key, value, updated_at)
                VALUES(\(channel), \(key), \(value), \(SQLiteStore.ms(clock.now())))
                """)
        } else {
            try db.run(StoreSQL.removeChannelState(channel, key: key))
        }
    }

    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try store.checkWritable("save the state of channel \(channel)")
        return try db.transaction { c in
            let current = try c.queryOne(StoreSQL.channelState(channel, key: key))?
                .bytes("value")
            let (newValue, result) = try body(current)
            if let newValue {
                try c.run(
                    """
                    INSERT OR REPLACE INTO channel_state(channel, key, value, updated_at)
                    VALUES(\(channel), \(key), \(newValue), \(SQLiteStore.ms(clock.now())))
                    """)
            } else {
                try c.run(StoreSQL.removeChannelState(channel, key: key))
            }
            return result
        }
    }
}
