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
        try db.run(write(value, forKey: key))
    }

    /// The statement that stores `value` under `key`, or removes the key when `value` is nil.
    func write(_ value: [UInt8]?, forKey key: String) -> SQL {
        guard let value else { return StoreSQL.removeChannelState(channel, key: key) }
        return """
            INSERT OR REPLACE INTO channel_state(channel, key, value, updated_at)
            VALUES(\(channel), \(key), \(value), \(SQLiteStore.ms(clock.now())))
            """
    }

    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try store.checkWritable("save the state of channel \(channel)")
        return try db.transaction { c in
            let current = try c.queryOne(StoreSQL.channelState(channel, key: key))?
                .bytes("value")
            let (newValue, result) = try body(current)
            try c.run(write(newValue, forKey: key))
            return result
        }
    }
}
