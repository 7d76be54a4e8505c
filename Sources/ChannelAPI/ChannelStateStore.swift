/// A small persistent key/value area lent to one channel (VAPID keys, relay key pairs, provider
/// tokens, rate-limit buckets, Live Activity revisions). Keys are private to the channel.
///
/// Backed by the router's store, so state survives restarts and is shared by every `herald`
/// process using the same database; ``update(_:_:)`` is atomic across processes.
public protocol ChannelStateStore: Sendable {
    /// The value stored under `key`, or nil.
    func value(forKey key: String) throws -> [UInt8]?
    /// Stores (or with nil, deletes) the value under `key`.
    func setValue(_ value: [UInt8]?, forKey key: String) throws
    /// Reads, transforms and writes one key atomically (a store transaction). `body` gets the current
    /// value and returns the new one (nil deletes) plus a result.
    func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T
    /// Like ``update(_:_:)``, and reads the values of `others` in the same transaction: `body` gets
    /// `key`'s value and theirs (in the order of `others`, nil for an absent key). One transaction
    /// instead of a read per record and a write: a Pulse push checks its phone and site key and
    /// changes its ledger at once. A store without its own answers with the reads before the update
    /// (see the default); an error thrown by `body` writes nothing.
    func update<T>(
        _ key: String, reading others: [String],
        _ body: ([UInt8]?, [[UInt8]?]) throws -> (newValue: [UInt8]?, result: T)
    ) throws -> T
}

extension ChannelStateStore {
    /// Reads `others` one by one, then runs ``update(_:_:)`` on `key`: atomic for `key` only (a
    /// store that can read them inside its transaction overrides this).
    public func update<T>(
        _ key: String, reading others: [String],
        _ body: ([UInt8]?, [[UInt8]?]) throws -> (newValue: [UInt8]?, result: T)
    ) throws -> T {
        let values = try others.map { try value(forKey: $0) }
        return try update(key) { try body($0, values) }
    }

    /// The value as a JSON document, or nil when absent or not JSON.
    public func json(forKey key: String) throws -> JSONValue? {
        guard let bytes = try value(forKey: key) else { return nil }
        return try? JSONValue.parse(bytes)
    }

    /// Stores a JSON document.
    public func setJSON(_ value: JSONValue, forKey key: String) throws {
        try setValue(value.canonicalBytes, forKey: key)
    }
}
