import CSQLite

extension SQLiteDatabase {
    /// Bytes SQLite has allocated now, over every connection of this process (page caches, schemas,
    /// statements): `sqlite3_memory_used`.
    public static var memoryUsed: Int64 { Int64(sqlite3_memory_used()) }

    /// The most bytes SQLite has had allocated at once in this process: `sqlite3_memory_highwater`.
    public static var memoryHighwater: Int64 { Int64(sqlite3_memory_highwater(0)) }
}
