import ChannelAPI
import HeraldCrypto
import HeraldSync

/// Hands out the channel's provider token: from memory while fresh, else from the channel state
/// store (shared by every `herald` process on the same database), minting a new one atomically
/// when the stored one is missing or due for renewal.
final class APNsTokenProvider: Sendable {
    static let stateKey = "provider-token"

    let key: P256PrivateKey
    let keyID: String
    let teamID: String
    /// The channel's context: its state store (where the token is shared), clock and logger.
    let context: ChannelContext
    private let memory = Locked<APNsProviderToken?>(nil)

    init(key: P256PrivateKey, keyID: String, teamID: String, context: ChannelContext) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.context = context
    }

    /// The token to send now. `replacing` is a JWT that APNs called expired.
    /// The provider token in memory, if one was signed or loaded (a bearer credential for an hour).
    var current: String? { memory.withLock { $0?.jwt } }

    func token(replacing: String? = nil) throws(CryptoError) -> APNsProviderToken {
        let now = context.clock.now().secondsSince1970
        if replacing == nil, let cached = memory.withLock({ $0 }), cached.keyID == keyID, !cached.needsRenewal(at: now)
        {
            return cached
        }
        let token: APNsProviderToken
        do {
            token = try context.state.update(APNsTokenProvider.stateKey) {
                old throws -> (newValue: [UInt8]?, result: APNsProviderToken) in
                let stored = old.flatMap { try? JSONValue.parse($0) }.flatMap(APNsProviderToken.init(stateJSON:))
                switch APNsProviderToken.decide(
                    stored: stored, now: now, keyID: keyID, teamID: teamID, replacing: replacing)
                {
                case .reuse(let t):
                    return (old, t)
                case .mint:
                    let t = try APNsProviderToken.sign(key: key, keyID: keyID, teamID: teamID, issuedAt: now)
                    return (t.stateJSON.canonicalBytes, t)
                }
            }
        } catch let error as CryptoError {
            throw error
        } catch {
            // The store failed: keep working from memory rather than failing every delivery.
            context.logger.warning("provider token state unavailable; using an in-memory token", ["error": "\(error)"])
            token = try memoryFallback(now: now, replacing: replacing)
        }
        memory.withLock { $0 = token }
        return token
    }

    private func memoryFallback(now: Int64, replacing: String?) throws(CryptoError) -> APNsProviderToken {
        let cached = memory.withLock { $0 }
        switch APNsProviderToken.decide(stored: cached, now: now, keyID: keyID, teamID: teamID, replacing: replacing) {
        case .reuse(let t): return t
        case .mint: return try APNsProviderToken.sign(key: key, keyID: keyID, teamID: teamID, issuedAt: now)
        }
    }
}
