/// A JWS signing algorithm together with its key.
public enum JWSAlgorithm: Sendable {
    /// ECDSA P-256 with SHA-256 (`ES256`); 64-byte `r || s` signatures.
    case es256(P256PrivateKey)
    /// RSASSA-PKCS1-v1_5 with SHA-256 (`RS256`).
    case rs256(RSAPrivateKey)
    /// HMAC-SHA-256 (`HS256`) with the given secret.
    case hs256([UInt8])
}
