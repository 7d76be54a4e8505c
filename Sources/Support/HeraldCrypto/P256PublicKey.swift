import COpenSSL

/// A NIST P-256 public key, validated once when it is created.
///
/// `@unchecked Sendable`: the wrapped `EVP_PKEY` is fully built in `init`, never mutated afterwards and only
/// read (as a verification key or ECDH peer) through fresh per-call `EVP_PKEY_CTX`/`EVP_MD_CTX` objects, which
/// OpenSSL 3 supports concurrently from several threads.
public final class P256PublicKey: @unchecked Sendable, Equatable {
    let pkey: OpaquePointer

    /// The 65-byte uncompressed point `0x04 || X || Y` (ANSI X9.63 / SEC 1).
    public let x963Representation: [UInt8]

    /// Imports and validates a 65-byte uncompressed point.
    ///
    /// The point is checked once here (correct encoding, coordinates in range, on the curve, not the point at
    /// infinity; P-256 has cofactor 1, so this is full public-key validation), so later ECDH with this key can
    /// skip validation.
    /// - Throws: ``CryptoError/Code/invalidKey``.
    public init(x963Representation: [UInt8]) throws(CryptoError) {
        guard x963Representation.count == 65, x963Representation[0] == 0x04 else {
            throw OpenSSL.invalid(.invalidKey, "P-256 public key must be a 65-byte uncompressed point")
        }
        pkey = try Self.importPoint(x963Representation)
        self.x963Representation = x963Representation
    }

    /// Imports a public key from an EC P-256 JWK (`d`, if present, is ignored).
    /// - Throws: ``CryptoError/Code/invalidKey`` or ``CryptoError/Code/invalidBase64``.
    public convenience init(jwk: JWK) throws(CryptoError) {
        guard jwk.kty == "EC", jwk.crv == "P-256" else {
            throw OpenSSL.invalid(.invalidKey, "JWK must have kty EC and crv P-256")
        }
        let x = try Base64.urlDecode(jwk.x)
        let y = try Base64.urlDecode(jwk.y)
        guard x.count == 32, y.count == 32 else {
            throw OpenSSL.invalid(.invalidKey, "JWK x and y must each be 32 bytes")
        }
        try self.init(x963Representation: [0x04] + x + y)
    }

    /// Wraps an already-validated key (a private key's public half), taking a new reference on `pkey`.
    init(sharing pkey: OpaquePointer, x963Representation: [UInt8]) {
        EVP_PKEY_up_ref(pkey)
        self.pkey = pkey
        self.x963Representation = x963Representation
    }

    deinit { EVP_PKEY_free(pkey) }

    /// The key as a public JWK (`kty` EC, `crv` P-256, base64url `x` and `y`, no `d`).
    public var jwk: JWK {
        JWK(
            kty: "EC", crv: "P-256", x: Base64.urlEncode(Array(x963Representation[1..<33])),
            y: Base64.urlEncode(Array(x963Representation[33..<65])), d: nil)
    }

    /// Checks an ES256 signature (ECDSA P-256 over SHA-256 of `message`).
    public func isValidSignature(_ signature: ECDSASignature, for message: [UInt8]) -> Bool {
        let der = signature.derRepresentation
        guard !der.isEmpty, let mdctx = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(mdctx)
            ERR_clear_error()
        }
        guard EVP_DigestVerifyInit_ex(mdctx, nil, "SHA256", nil, nil, pkey, nil) == 1 else { return false }
        let status = der.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer {
                EVP_DigestVerify(mdctx, sig.baseAddress, sig.count, $0.baseAddress, $0.count)
            }
        }
        return status == 1
    }

    /// Two public keys are equal when their points are equal.
    public static func == (lhs: P256PublicKey, rhs: P256PublicKey) -> Bool {
        lhs.x963Representation == rhs.x963Representation
    }

    /// Imports a point into a fresh `EVP_PKEY` that shares the P-256 parameters of a template key.
    ///
    /// `EVP_PKEY_set1_encoded_public_key` decodes the point with `EC_POINT_oct2point`, which refuses
    /// coordinates outside the field and points off the curve; the caller has already required the
    /// 65-byte uncompressed form, so the point at infinity cannot be encoded. Duplicating a parameters
    /// template costs a fifth of `EVP_PKEY_fromdata`, which builds the curve group from its name on every call.
    private static func importPoint(_ point: [UInt8]) throws(CryptoError) -> OpaquePointer {
        guard let parameters = OpenSSL.p256Parameters, let key = EVP_PKEY_dup(parameters) else {
            throw OpenSSL.error("EVP_PKEY_dup", .openssl, "cannot create a P-256 key")
        }
        let status = point.withUnsafeBufferPointer { EVP_PKEY_set1_encoded_public_key(key, $0.baseAddress, $0.count) }
        guard status == 1 else {
            EVP_PKEY_free(key)
            throw OpenSSL.error(
                "EVP_PKEY_set1_encoded_public_key", .invalidKey, "point is not a valid P-256 public key")
        }
        return key
    }
}
