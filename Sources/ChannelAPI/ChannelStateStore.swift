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
}

extension ChannelStateStore {
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
