import ChannelAPI
import HeraldCrypto

/// One VAPID signing key pair.
public struct VAPIDKey: Sendable {
    /// Stable id: the first 16 characters of base64url(SHA-256(public key)). A page can compute it
    /// from the `applicationServerKey` it subscribed with.
    public let id: String
    /// The 65-byte uncompressed public key (what browsers get as `applicationServerKey`).
    public let publicKey: [UInt8]
    /// Unix seconds when the key was created.
    public let createdAt: Int64
    let privateKey: P256PrivateKey

    /// The public key as base64url (the `applicationServerKey` and the `k=` parameter).
    public var applicationServerKey: String { Base64.urlEncode(publicKey) }

    init(privateKey: P256PrivateKey, createdAt: Int64) {
        self.privateKey = privateKey
        self.publicKey = privateKey.publicKey.x963Representation
        self.id = VAPIDKey.id(for: publicKey)
        self.createdAt = createdAt
    }

    /// The key id for a public key (65 bytes, or its base64url text decoded).
    public static func id(for publicKey: [UInt8]) -> String {
        String(Base64.urlEncode(SHA256.hash(publicKey)).prefix(16))
    }
}

/// The channel's VAPID key pairs as kept in the channel state (key ``stateKey``), oldest first.
///
/// The newest key is the one handed to browsers for new subscriptions; every key keeps signing for
/// the subscriptions made with it (devices record its id in `vapidKeyId`). The stored form is JSON:
/// `{"version":1,"keys":[{"id","privateKey","publicKey","createdAt"}]}` with base64url key bytes.
/// A stored value that does not parse, or whose keys do not match their ids, is corrupt: Herald
/// refuses to use or overwrite it.
public struct VAPIDKeyRing: Sendable {
    /// The state key the ring is stored under.
    public static let stateKey = "vapid.keys"
    /// Oldest first; never empty.
    public let keys: [VAPIDKey]

    /// The key for new subscriptions.
    public var newest: VAPIDKey { keys[keys.count - 1] }

    init(keys: [VAPIDKey]) throws(WebPushError) {
        guard !keys.isEmpty else { throw WebPushError("VAPID key ring is empty") }
        self.keys = keys
    }

    /// The key with `id`.
    public func key(id: String) -> VAPIDKey? { keys.first { $0.id == id } }

    /// A ring with one fresh key.
    public static func generate(now: Int64) throws(WebPushError) -> VAPIDKeyRing {
        try VAPIDKeyRing(keys: [try freshKey(now: now)])
    }

    /// This ring plus a fresh newest key.
    public func rotated(now: Int64) throws(WebPushError) -> VAPIDKeyRing {
        try VAPIDKeyRing(keys: keys + [try VAPIDKeyRing.freshKey(now: now)])
    }

    static func freshKey(now: Int64) throws(WebPushError) -> VAPIDKey {
        do { return VAPIDKey(privateKey: try P256PrivateKey(), createdAt: now) } catch {
            throw WebPushError("cannot create a VAPID key pair: \(error.message)")
        }
    }

    /// The stored form.
    public var encoded: [UInt8] {
        JSONValue.object([
            "version": 1,
            "keys": .array(
                keys.map { k in
                    .object([
                        "id": .string(k.id), "privateKey": .string(Base64.urlEncode(k.privateKey.rawRepresentation)),
                        "publicKey": .string(k.applicationServerKey), "createdAt": .number(Double(k.createdAt)),
                    ])
                }),
        ]).canonicalBytes
    }

    /// Parses the stored form; every problem is reported, nothing is repaired.
    public static func decode(_ bytes: [UInt8]) throws(WebPushError) -> VAPIDKeyRing {
        let corrupt = "stored VAPID keys (state key \(stateKey)) are corrupt"
        guard let root = try? JSONValue.parse(bytes), let o = root.objectValue else {
            throw WebPushError("\(corrupt): not a JSON object")
        }
        guard o["version"]?.intValue == 1 else { throw WebPushError("\(corrupt): unsupported version") }
        guard let list = o["keys"]?.arrayValue, !list.isEmpty else { throw WebPushError("\(corrupt): no keys") }
        var keys: [VAPIDKey] = []
        for (i, item) in list.enumerated() {
            guard let k = item.objectValue, let id = k["id"]?.stringValue, let d = k["privateKey"]?.stringValue,
                let pub = k["publicKey"]?.stringValue, let created = k["createdAt"]?.intValue
            else { throw WebPushError("\(corrupt): key \(i) lacks id, privateKey, publicKey or createdAt") }
            let key: VAPIDKey
            do {
                key = VAPIDKey(
                    privateKey: try P256PrivateKey(rawRepresentation: try Base64.urlDecode(d)),
                    createdAt: Int64(created))
            } catch {
                throw WebPushError("\(corrupt): key \(i) is not a valid P-256 private key")
            }
            guard key.applicationServerKey == pub, key.id == id else {
                throw WebPushError("\(corrupt): key \(i) does not match its public key or id")
            }
            guard !keys.contains(where: { $0.id == id }) else {
                throw WebPushError("\(corrupt): duplicate key id \(id)")
            }
            keys.append(key)
        }
        return try VAPIDKeyRing(keys: keys)
    }

    /// Loads the ring from `state`, creating and storing one key on first use (atomically, so two
    /// processes agree on one key). A corrupt stored value throws and is left untouched.
    public static func loadOrCreate(from state: any ChannelStateStore, now: Int64) throws(WebPushError) -> VAPIDKeyRing
    {
        do {
            if let stored = try state.value(forKey: stateKey) { return try decode(stored) }
            return try state.update(stateKey) {
                old throws(WebPushError) -> (newValue: [UInt8]?, result: VAPIDKeyRing) in
                if let old { return (old, try decode(old)) }
                let ring = try generate(now: now)
                return (ring.encoded, ring)
            }
        } catch let error as WebPushError {
            throw error
        } catch {
            throw WebPushError("cannot read the VAPID keys from the channel state: \(error)")
        }
    }

    /// Adds a fresh newest key to the stored ring (creating the ring first if there is none).
    public static func rotate(in state: any ChannelStateStore, now: Int64) throws(WebPushError) -> VAPIDKeyRing {
        do {
            return try state.update(stateKey) {
                old throws(WebPushError) -> (newValue: [UInt8]?, result: VAPIDKeyRing) in
                let ring: VAPIDKeyRing
                if let old { ring = try decode(old).rotated(now: now) } else { ring = try generate(now: now) }
                return (ring.encoded, ring)
            }
        } catch let error as WebPushError {
            throw error
        } catch {
            throw WebPushError("cannot update the VAPID keys in the channel state: \(error)")
        }
    }
}
