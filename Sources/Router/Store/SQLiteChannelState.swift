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
        // An upsert rewrites the row where it is; INSERT OR REPLACE deleted it and inserted it again
        // under a new rowid (its old and new table pages, the key index and the freelist: about six
        // WAL pages for one changed value).
        return """
            INSERT INTO channel_state(channel, key, value, updated_at)
            VALUES(\(channel), \(key), \(value), \(SQLiteStore.ms(clock.now())))
            ON CONFLICT(channel, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
            """
    }

    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try update(key, reading: []) { current, _ in try body(current) }
    }

    /// The reads and the update in one write transaction (on the writer connection, whose page cache
    /// a commit of its own does not drop; the reader connection's is dropped by every commit).
    func update<T>(
        _ key: String, reading others: [String],
        _ body: ([UInt8]?, [[UInt8]?]) throws -> (newValue: [UInt8]?, result: T)
    ) throws -> T {
        try store.checkWritable("save the state of channel \(channel)")
        let keys = [key] + others
        return try db.transaction { c in
            // One statement for all the keys (a Pulse push reads three): a UNION ALL of point lookups,
            // since `key IN (…)` of bound values makes SQLite build an ephemeral table on every run.
            var found: [String: [UInt8]] = [:]
            var sql = SQL()
            for (i, k) in keys.enumerated() {
                if i > 0 { sql.appendLiteral(" UNION ALL ") }
                sql.append("SELECT key, value FROM channel_state WHERE channel = \(channel) AND key = \(k)")
            }
            for row in try c.query(sql) {
                if let k = row.string("key"), let v = row.bytes("value") { found[k] = v }
            }
            let (newValue, result) = try body(found[key], others.map { found[$0] })
            try c.run(write(newValue, forKey: key))
            return result
        }
    }
}
