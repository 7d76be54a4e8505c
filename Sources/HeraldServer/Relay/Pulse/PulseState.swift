import ChannelAPI
import Foundation
import HeraldCrypto

/// A registered phone: its push-to-start token and environment, the SHA-256 of the credential the
/// app authenticates with, its sites, and whether it is gone (deleted by the app, or its
/// push-to-start token refused by APNs: every site key then gets 410).
struct PulsePhone: Equatable {
    var credentialHash: String
    var token: String
    var environment: String
    var sources: [String] = []
    var gone = false

    init(credentialHash: String, token: String, environment: String) {
        self.credentialHash = credentialHash
        self.token = token
        self.environment = environment
    }

    init?(_ bytes: [UInt8]?) {
        guard let bytes, let o = (try? JSONValue.parse(bytes))?.objectValue else { return nil }
        credentialHash = o["cred"]?.stringValue ?? ""
        token = o["token"]?.stringValue ?? ""
        environment = o["env"]?.stringValue ?? "production"
        sources = (o["sources"]?.arrayValue ?? []).compactMap(\.stringValue)
        gone = o["gone"]?.boolValue ?? false
    }

    var bytes: [UInt8] {
        JSONValue.object([
            "cred": .string(credentialHash), "token": .string(token), "env": .string(environment),
            "sources": .array(sources.map { .string($0) }), "gone": .bool(gone),
        ]).canonicalBytes
    }
}

/// One site's key on one phone: the sealed pushKey, the site's name (shown as `site` and as the
/// alert's title) and whether the app revoked it (the key material is dropped then).
struct PulseSiteKey: Equatable {
    var sealedKey: String?
    var name: String
    var revoked = false

    init(sealedKey: String?, name: String) {
        self.sealedKey = sealedKey
        self.name = name
    }

    init?(_ bytes: [UInt8]?) {
        guard let bytes, let o = (try? JSONValue.parse(bytes))?.objectValue else { return nil }
        sealedKey = o["key"]?.stringValue
        name = o["name"]?.stringValue ?? ""
        revoked = o["revoked"]?.boolValue ?? false
    }

    var bytes: [UInt8] {
        var o: [String: JSONValue] = ["name": .string(name), "revoked": .bool(revoked)]
        if let k = sealedKey { o["key"] = .string(k) }
        return JSONValue.object(o).canonicalBytes
    }
}

/// The Pulse relay's records in the store's `relay.pulse` area (shared by every `herald serve` on
/// one database): `phone:<deviceId>`, `key:<deviceId>:<sourceId>`, `ledger:<deviceId>:<sourceId>`
/// and `ptst:<SHA-256 of a push-to-start token>` → deviceId (so re-registering a token replaces
/// the phone that had it).
struct PulseState {
    let store: any ChannelStateStore

    static let unavailable = PulseRefusal(503, "store_unavailable", "the relay's store cannot serve", retryAfter: 5)

    static func hash(_ text: String) -> String {
        Hex.encode(SHA256.hash(Array(text.utf8)))
    }

    func phone(_ deviceId: String) throws(PulseRefusal) -> PulsePhone? {
        do { return PulsePhone(try store.value(forKey: "phone:" + deviceId)) } catch { throw Self.unavailable }
    }

    func siteKey(_ deviceId: String, _ sourceId: String) throws(PulseRefusal) -> PulseSiteKey? {
        do { return PulseSiteKey(try store.value(forKey: "key:\(deviceId):\(sourceId)")) } catch {
            throw Self.unavailable
        }
    }

    func save(_ phone: PulsePhone, _ deviceId: String) throws(PulseRefusal) {
        do { try store.setValue(phone.bytes, forKey: "phone:" + deviceId) } catch { throw Self.unavailable }
    }

    func save(_ key: PulseSiteKey, _ deviceId: String, _ sourceId: String) throws(PulseRefusal) {
        do { try store.setValue(key.bytes, forKey: "key:\(deviceId):\(sourceId)") } catch { throw Self.unavailable }
    }

    /// Changes a phone record atomically; nil when there is none.
    func updatePhone(_ deviceId: String, _ change: (inout PulsePhone) -> Void) throws(PulseRefusal)
        -> PulsePhone?
    {
        do {
            return try store.update("phone:" + deviceId) { old -> (newValue: [UInt8]?, result: PulsePhone?) in
                guard var p = PulsePhone(old) else { return (old, nil) }
                change(&p)
                return (p.bytes, p)
            }
        } catch { throw Self.unavailable }
    }

    /// Marks the phone gone and forgets its site keys and ledgers (the tombstone answers 410).
    func retire(_ deviceId: String) throws(PulseRefusal) {
        guard let p = try updatePhone(deviceId, { $0.gone = true }) else { return }
        for s in p.sources {
            try? store.setValue(nil, forKey: "key:\(deviceId):\(s)")
            try? store.setValue(nil, forKey: "ledger:\(deviceId):\(s)")
        }
    }

    /// Points the push-to-start token's index at `deviceId`; returns the phone that had it before.
    func claim(token: String, for deviceId: String) throws(PulseRefusal) -> String? {
        do {
            return try store.update("ptst:" + Self.hash(token.lowercased())) {
                old -> (newValue: [UInt8]?, result: String?) in
                (Array(deviceId.utf8), old.map { String(decoding: $0, as: UTF8.self) })
            }
        } catch { throw Self.unavailable }
    }

    /// Reads the phone and the site key and runs `body` on the ledger of (deviceId, sourceId), all in
    /// one store transaction: a site's push is one write and no separate reads. A refusal thrown by
    /// `body` (an unknown key, a bad signature) leaves the ledger as it was.
    func ledger<T>(
        _ deviceId: String, _ sourceId: String,
        checking body: (PulsePhone?, PulseSiteKey?, inout PulseLedger) throws(PulseRefusal) -> T
    ) throws(PulseRefusal) -> T {
        do {
            let records = ["phone:" + deviceId, "key:\(deviceId):\(sourceId)"]
            return try store.update("ledger:\(deviceId):\(sourceId)", reading: records) {
                old, values -> (newValue: [UInt8]?, result: T) in
                var l = PulseLedger(old)
                let r = try body(PulsePhone(values[0]), PulseSiteKey(values[1]), &l)
                return (l.bytes, r)
            }
        } catch let refusal as PulseRefusal {
            throw refusal
        } catch {
            throw Self.unavailable
        }
    }

    /// Runs `body` on the ledger of (deviceId, sourceId) in one store transaction.
    func ledger<T>(_ deviceId: String, _ sourceId: String, _ body: (inout PulseLedger) -> T)
        throws(PulseRefusal) -> T
    {
        do {
            return try store.update("ledger:\(deviceId):\(sourceId)") { old -> (newValue: [UInt8]?, result: T) in
                var l = PulseLedger(old)
                let r = body(&l)
                return (l.bytes, r)
            }
        } catch { throw Self.unavailable }
    }
}
