import ChannelAPI
import Foundation
import HeraldCrypto

/// A relay's per-caller limit kept in the store, so every `herald serve` on one shared store
/// (PostgreSQL) takes from the same bucket (docs/relay-server.md, "Several processes"). One key per
/// caller in the store area `relay.limits.<protocol>`: `<hex SHA-256 of the caller key>` →
/// `{"tokens", "at"}` (seconds since 1970), updated in one store transaction per request
/// (``ChannelStateStore/update(_:_:)``, a row lock on PostgreSQL). The caller's name or address is
/// never stored, only its hash.
struct StoredRateLimit {
    let store: any ChannelStateStore
    let perSecond: Double
    let burst: Double

    /// The store failed.
    struct Unavailable: Error {}

    init(store: any ChannelStateStore, perSecond: Double, burst: Int) {
        self.store = store
        self.perSecond = max(perSecond, 1e-6)
        self.burst = Double(max(1, burst))
    }

    /// The stored key of a caller key (`token:NAME`, `address:IP`).
    static func key(_ caller: String) -> String {
        Hex.encode(SHA256.hash(Array(caller.utf8)))
    }

    /// Takes one request from `caller`'s bucket at `now` (wall-clock seconds since 1970, the same in
    /// every process): nil when allowed, else the whole seconds to wait (at least 1).
    func take(_ caller: String, now: Double) throws(Unavailable) -> Int? {
        do {
            return try store.update(Self.key(caller)) { old -> (newValue: [UInt8]?, result: Int?) in
                var bucket = Self.bucket(old) ?? RateLimiter.Bucket(tokens: burst, at: now)
                let wait = bucket.take(now: now, perSecond: perSecond, burst: burst)
                return (Self.bytes(bucket), wait)
            }
        } catch { throw Unavailable() }
    }

    /// A stored bucket; nil when absent or unreadable (a fresh bucket then).
    static func bucket(_ bytes: [UInt8]?) -> RateLimiter.Bucket? {
        guard let bytes, let o = (try? JSONValue.parse(bytes))?.objectValue,
            case .number(let tokens)? = o["tokens"], case .number(let at)? = o["at"]
        else { return nil }
        return RateLimiter.Bucket(tokens: tokens, at: at)
    }

    /// A bucket as stored.
    static func bytes(_ b: RateLimiter.Bucket) -> [UInt8] {
        JSONValue.object(["tokens": .number(b.tokens), "at": .number(b.at)]).canonicalBytes
    }
}
