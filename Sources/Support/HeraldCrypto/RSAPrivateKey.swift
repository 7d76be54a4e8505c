import COpenSSL

/// An RSA private key for RS256 (e.g. Google service-account OAuth assertions).
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is fully built in `init` and never mutated afterwards; each
/// signature uses its own `EVP_MD_CTX`, which OpenSSL 3 supports concurrently.
public final class RSAPrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Imports a PEM RSA private key: PKCS#8 `BEGIN PRIVATE KEY` (the `private_key` of a Google service-account
    /// JSON file) or PKCS#1 `BEGIN RSA PRIVATE KEY`. Keys shorter than 2048 bits are rejected.
    /// - Throws: ``CryptoError/Code/invalidPEM`` or ``CryptoError/Code/invalidKey``.
    public init(pemRepresentation: String) throws(CryptoError) {
        let key = try OpenSSL.readPrivateKeyPEM(pemRepresentation)
        guard EVP_PKEY_is_a(key, "RSA") == 1 else {
            EVP_PKEY_free(key)
            throw OpenSSL.invalid(.invalidKey, "PEM key is not an RSA key")
        }
        guard EVP_PKEY_get_bits(key) >= 2048 else {
            EVP_PKEY_free(key)
            throw OpenSSL.invalid(.invalidKey, "RSA key must be at least 2048 bits")
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Signs `message` with RSASSA-PKCS1-v1_5 over SHA-256 (JWS `RS256`).
    /// - Throws: ``CryptoError/Code/openssl`` if signing fails.
    public func signatureRS256(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try OpenSSL.digestSignSHA256(pkey, message)
    }
}
