import ChannelAPI
import HeraldSync
import Synchronization

/// A ``ChannelStateStore`` in memory, for testing a channel without a router.
public final class InMemoryChannelState: ChannelStateStore {
    private let values = Locked<[String: [UInt8]]>([:])

    /// An empty state.
    public init() {}

    /// The stored value.
    public func value(forKey key: String) throws -> [UInt8]? { values.withLock { $0[key] } }

    /// Stores or deletes.
    public func setValue(_ value: [UInt8]?, forKey key: String) throws { values.withLock { $0[key] = value } }

    /// Atomic read-modify-write.
    public func update<T>(_ key: String, _ body: ([UInt8]?) throws -> (newValue: [UInt8]?, result: T)) throws -> T {
        try update(key, reading: []) { current, _ in try body(current) }
    }

    /// Atomic read-modify-write that also reads `others` under the same lock.
    public func update<T>(
        _ key: String, reading others: [String],
        _ body: ([UInt8]?, [[UInt8]?]) throws -> (newValue: [UInt8]?, result: T)
    ) throws -> T {
        try values.withLock { v in
            let (n, r) = try body(v[key], others.map { v[$0] })
            v[key] = n
            return r
        }
    }

    /// Every key currently stored.
    public var keys: [String] { values.withLock { Array($0.keys).sorted() } }
}

/// Collects log records so tests can assert that nothing secret was logged.
public final class RecordingLogSink: LogSink {
    private let records = Locked<[LogRecord]>([])

    /// An empty sink.
    public init() {}

    /// Keeps the record.
    public func write(_ record: LogRecord) { records.withLock { $0.append(record) } }

    /// Everything logged so far.
    public var all: [LogRecord] { records.withLock { $0 } }

    /// Every message and field value, one string per record, for "secret not in logs" checks.
    public var text: String {
        all.map { r in
            ([r.message] + r.fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
        .joined(separator: "\n")
    }
}
