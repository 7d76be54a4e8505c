import CHeraldShims
import COpenSSL

/// A NIST P-256 private key for ECDH (Web Push) and ES256 signing (VAPID, APNs).
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is fully built in `init`, never mutated afterwards, and every
/// operation uses its own per-call `EVP_PKEY_CTX`/`EVP_MD_CTX`; OpenSSL 3 supports such concurrent read-only use.
public final class P256PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer
    private let publicPoint: [UInt8]

    /// The order n of the P-256 group, big-endian.
    private static let groupOrder: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// Generates a new random key pair.
    /// - Throws: ``CryptoError/Code/openssl`` if key generation fails.
    public convenience init() throws(CryptoError) {
        // Borrow a ready keygen context: creating one per key doubles the cost of generation.
        guard let ctx = OpenSSL.p256KeygenContexts.take() else {
            throw OpenSSL.error("EVP_PKEY_keygen_init", .openssl, "cannot create a P-256 key-generation context")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(ctx, &key) == 1, let key else {
            OpenSSL.p256KeygenContexts.discard(ctx)
            throw OpenSSL.error("EVP_PKEY_generate")
        }
        OpenSSL.p256KeygenContexts.give(ctx)
        try self.init(owning: key, knownP256: true)
    }

    /// Imports a 32-byte big-endian private scalar and computes its public key.
    /// - Throws: ``CryptoError/Code/invalidKey`` if the length is wrong or the scalar is not in `1..<n`.
    public convenience init(rawRepresentation: [UInt8]) throws(CryptoError) {
        guard rawRepresentation.count == 32 else {
            throw OpenSSL.invalid(.invalidKey, "P-256 private key must be 32 bytes, got \(rawRepresentation.count)")
        }
        guard rawRepresentation.contains(where: { $0 != 0 }),
            rawRepresentation.lexicographicallyPrecedes(Self.groupOrder)
        else {
            throw OpenSSL.invalid(.invalidKey, "P-256 private scalar must be in 1..<n")
        }
        // SEC 1 ECPrivateKey without the optional public key; OpenSSL's decoder computes the public point.
        var der: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + rawRepresentation
        der += [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        defer {
            der.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
        }
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &cursor, buffer.count)
        }
        guard let key else { throw OpenSSL.error("d2i_PrivateKey", .invalidKey, "cannot import P-256 scalar") }
        try self.init(owning: key, knownP256: true)
    }

    /// Imports a PEM private key: PKCS#8 `BEGIN PRIVATE KEY` (e.g. an Apple `.p8` file) or SEC 1
    /// `BEGIN EC PRIVATE KEY`. Encrypted PEM is rejected (no passphrase prompt).
    /// - Throws: ``CryptoError/Code/invalidPEM`` if the PEM does not parse, ``CryptoError/Code/invalidKey`` if it
    ///   is not a P-256 key.
    public convenience init(pemRepresentation: String) throws(CryptoError) {
        let key = try OpenSSL.readPrivateKeyPEM(pemRepresentation)
        try self.init(owning: key, knownP256: false)
    }

    /// Imports a private key from an EC P-256 JWK that has `d`; `x`/`y` must match `d`.
    /// - Throws: ``CryptoError/Code/invalidKey`` or ``CryptoError/Code/invalidBase64``.
    public convenience init(jwk: JWK) throws(CryptoError) {
        guard jwk.kty == "EC", jwk.crv == "P-256" else {
            throw OpenSSL.invalid(.invalidKey, "JWK must have kty EC and crv P-256")
        }
        guard let d = jwk.d else { throw OpenSSL.invalid(.invalidKey, "JWK has no private member d") }
        try self.init(rawRepresentation: try Base64.urlDecode(d))
        let expected = try Base64.urlDecode(jwk.x) + Base64.urlDecode(jwk.y)
        guard ConstantTime.equals(expected, Array(publicPoint[1...])) else {
            throw OpenSSL.invalid(.invalidKey, "JWK x/y do not match d")
        }
    }

    /// Takes ownership of `key` (freed on failure), checks it is a P-256 key unless it was created as one here
    /// (`knownP256`; the check costs an extra parameter export), and caches its public point.
    private init(owning key: OpaquePointer, knownP256: Bool) throws(CryptoError) {
        guard knownP256 || (EVP_PKEY_is_a(key, "EC") == 1 && OpenSSL.groupName(of: key) == "prime256v1") else {
            EVP_PKEY_free(key)
            throw OpenSSL.invalid(.invalidKey, "key is not an EC P-256 key")
        }
        do {
            publicPoint = try OpenSSL.uncompressedPublicKey(of: key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        pkey = key
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The 32-byte big-endian private scalar.
    ///
    /// Empty only if OpenSSL fails to export it.
    public var rawRepresentation: [UInt8] {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, "priv", &bn) == 1, let bn else {
            ERR_clear_error()
            return []
        }
        defer { BN_clear_free(bn) }
        var out = [UInt8](repeating: 0, count: 32)
        let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(bn, $0.baseAddress, 32) }
        return written == 32 ? out : []
    }

    /// The key as an unencrypted PKCS#8 PEM document (`BEGIN PRIVATE KEY`).
    ///
    /// Empty only if OpenSSL fails to allocate.
    public var pemRepresentation: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else {
            ERR_clear_error()
            return ""
        }
        var data: UnsafeMutablePointer<CChar>?
        let length = herald_bio_get_mem_data(bio, &data)
        guard length > 0, let data else { return "" }
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The matching public key (shares the underlying OpenSSL key; no re-validation).
    public var publicKey: P256PublicKey {
        P256PublicKey(sharing: pkey, x963Representation: publicPoint)
    }

    /// The key as a private JWK (with `d`).
    public var jwk: JWK {
        var result = publicKey.jwk
        result.d = Base64.urlEncode(rawRepresentation)
        return result
    }

    /// ECDH: returns the 32-byte x-coordinate of the shared point with `peer`.
    ///
    /// The peer was validated when it was created, so it is not re-validated here.
    /// - Throws: ``CryptoError/Code/openssl`` if derivation fails.
    public func sharedSecret(with peer: P256PublicKey) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
            throw OpenSSL.error("EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_derive_init(ctx) == 1 else { throw OpenSSL.error("EVP_PKEY_derive_init") }
        guard EVP_PKEY_derive_set_peer_ex(ctx, peer.pkey, 0) == 1 else {
            throw OpenSSL.error("EVP_PKEY_derive_set_peer_ex")
        }
        var secret = [UInt8](repeating: 0, count: 32)
        var length = 32
        let status = secret.withUnsafeMutableBufferPointer { EVP_PKEY_derive(ctx, $0.baseAddress, &length) }
        guard status == 1, length == 32 else { throw OpenSSL.error("EVP_PKEY_derive") }
        return secret
    }

    /// Signs `message` with ES256 (ECDSA P-256 over SHA-256(message)).
    /// - Throws: ``CryptoError/Code/openssl`` if signing fails.
    public func signature(for message: [UInt8]) throws(CryptoError) -> ECDSASignature {
        let der = try OpenSSL.digestSignSHA256(pkey, message)
        return try ECDSASignature(derRepresentation: der)
    }
}
