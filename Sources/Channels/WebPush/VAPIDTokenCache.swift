import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldSync

/// Signed VAPID `Authorization` values per (key, audience), reused until shortly before they
/// expire: the margin is 10 minutes, or half the lifetime for lifetimes under 20 minutes. Reuse
/// lets push services cache the signature check (RFC 8292 §4). In memory only.
final class VAPIDTokenCache: Sendable {
    struct Entry {
        var authorization: String
        var token: String
        var expiresAt: Int64
    }

    private let entries = Locked<[String: Entry]>([:])
    static let maxEntries = 1024

    /// The `Authorization` value and the bare token for `audience`, signed with `key`.
    func authorization(
        audience: String, key: VAPIDKey, subject: String, lifetime: Duration, now: Date
    ) throws(CryptoError) -> (authorization: String, token: String) {
        let cacheKey = key.id + " " + audience
        let nowSeconds = now.secondsSince1970
        let life = max(1, lifetime.components.seconds)
        let margin = min(600, life / 2)
        // Check, sign and store under one lock: concurrent first sends to an origin share one
        // token instead of each minting their own (signing happens once per origin per lifetime).
        let entry = try entries.withLock { (all: inout [String: Entry]) throws(CryptoError) -> Entry in
            if let hit = all[cacheKey], nowSeconds < hit.expiresAt - margin { return hit }
            let exp = nowSeconds + life
            let token = try VAPID.token(audience: audience, expiresAt: exp, subject: subject, key: key.privateKey)
            let fresh = Entry(
                authorization: VAPID.authorization(token: token, publicKey: key.publicKey), token: token, expiresAt: exp
            )
            if all.count >= VAPIDTokenCache.maxEntries { all = all.filter { nowSeconds < $0.value.expiresAt - margin } }
            if all.count >= VAPIDTokenCache.maxEntries { all.removeAll() }
            all[cacheKey] = fresh
            return fresh
        }
        return (entry.authorization, entry.token)
    }
}
