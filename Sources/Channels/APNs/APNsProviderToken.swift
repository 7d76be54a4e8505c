import ChannelAPI
import HeraldCrypto

/// An APNs provider authentication token: an ES256 JWT with header `{"alg":"ES256","kid":…}` and
/// claims `{"iss":<team id>,"iat":<unix seconds>}`.
///
/// Apple accepts a token for one hour and refuses renewals more often than every 20 minutes
/// (`TooManyProviderTokenUpdates`), so a token is reused until ``renewalAge`` and shared through the
/// channel's state store by every process.
public struct APNsProviderToken: Sendable, Equatable {
    /// The compact JWS. A secret: never log it.
    public let jwt: String
    /// The `iat` claim, unix seconds.
    public let issuedAt: Int64
    /// The `kid` header.
    public let keyID: String
    /// The `iss` claim.
    public let teamID: String

    /// Age at which a token is replaced (50 minutes: inside Apple's 20-60 minute window).
    public static let renewalAge: Int64 = 50 * 60
    /// Apple's minimum interval between token updates (20 minutes).
    public static let minimumRenewalInterval: Int64 = 20 * 60

    /// Creates a token value from its parts (for example when read back from the state store).
    public init(jwt: String, issuedAt: Int64, keyID: String, teamID: String) {
        self.jwt = jwt
        self.issuedAt = issuedAt
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Signs a new token with the `.p8` key.
    public static func sign(key: P256PrivateKey, keyID: String, teamID: String, issuedAt: Int64) throws(CryptoError)
        -> APNsProviderToken
    {
        let header: JSONValue = ["alg": "ES256", "kid": .string(keyID)]
        let claims: JSONValue = ["iss": .string(teamID), "iat": .number(Double(issuedAt))]
        let jwt = try JWS.compact(
            headerJSON: header.canonicalBytes, payloadJSON: claims.canonicalBytes, algorithm: .es256(key))
        return APNsProviderToken(jwt: jwt, issuedAt: issuedAt, keyID: keyID, teamID: teamID)
    }

    /// Whether the token should be replaced at `now` (unix seconds). A clock that went backwards
    /// (negative age) keeps the token rather than minting a burst of new ones.
    public func needsRenewal(at now: Int64) -> Bool { now - issuedAt >= APNsProviderToken.renewalAge }

    /// The token as stored in the channel state (`{"iat","iss","jwt","kid"}`).
    public var stateJSON: JSONValue {
        [
            "jwt": .string(jwt), "iat": .number(Double(issuedAt)), "kid": .string(keyID), "iss": .string(teamID),
        ]
    }

    /// Reads a stored token; nil when the value is not one.
    public init?(stateJSON: JSONValue) {
        guard let jwt = stateJSON["jwt"]?.stringValue, let iat = stateJSON["iat"]?.intValue,
            let kid = stateJSON["kid"]?.stringValue, let iss = stateJSON["iss"]?.stringValue
        else { return nil }
        self.init(jwt: jwt, issuedAt: Int64(iat), keyID: kid, teamID: iss)
    }

    /// What to do with the stored token.
    public enum Decision: Sendable, Equatable {
        /// Use this token.
        case reuse(APNsProviderToken)
        /// Sign a new one and store it.
        case mint
    }

    /// The token policy, without I/O.
    ///
    /// - `stored`: the token in the state store (nil when none or unreadable).
    /// - `replacing`: the JWT APNs just answered `ExpiredProviderToken` to, if any. When the stored token
    ///   is a different one, another process or task already renewed it and it is reused (single flight).
    public static func decide(
        stored: APNsProviderToken?, now: Int64, keyID: String, teamID: String, replacing: String? = nil
    ) -> Decision {
        guard let stored, stored.keyID == keyID, stored.teamID == teamID else { return .mint }
        if let replacing { return stored.jwt == replacing ? .mint : .reuse(stored) }
        return stored.needsRenewal(at: now) ? .mint : .reuse(stored)
    }
}
