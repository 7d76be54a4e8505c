import COpenSSL

/// An ECDSA P-256 signature, stored as the 64-byte JOSE form `r || s`.
public struct ECDSASignature: Sendable, Equatable {
    /// The 64-byte concatenation of the big-endian, zero-padded `r` and `s` (JWS ES256 format).
    public let rawRepresentation: [UInt8]

    /// Creates a signature from 64 bytes `r || s`.
    /// - Throws: ``CryptoError/Code/invalidInput`` if the length is not 64.
    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        guard rawRepresentation.count == 64 else {
            throw OpenSSL.invalid(.invalidInput, "ES256 signature must be 64 bytes, got \(rawRepresentation.count)")
        }
        self.rawRepresentation = rawRepresentation
    }

    /// Creates a signature from its DER `ECDSA-Sig-Value` encoding (as produced by OpenSSL).
    /// - Throws: ``CryptoError/Code/invalidInput`` if the DER is malformed, has trailing bytes, or `r`/`s` exceed
    ///   32 bytes.
    public init(derRepresentation: [UInt8]) throws(CryptoError) {
        guard !derRepresentation.isEmpty, derRepresentation.count < 256 else {
            throw OpenSSL.invalid(.invalidInput, "DER ECDSA signature has an invalid length")
        }
        let parsed: (OpaquePointer?, Int) = derRepresentation.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let sig = d2i_ECDSA_SIG(nil, &cursor, buffer.count)
            var consumed = -1
            if let start = buffer.baseAddress, let end = cursor { consumed = start.distance(to: end) }
            return (sig, consumed)
        }
        guard let sig = parsed.0 else {
            throw OpenSSL.error("d2i_ECDSA_SIG", .invalidInput, "malformed DER ECDSA signature")
        }
        defer { ECDSA_SIG_free(sig) }
        guard parsed.1 == derRepresentation.count else {
            throw OpenSSL.invalid(.invalidInput, "trailing bytes after DER ECDSA signature")
        }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(sig, &r, &s)
        guard let r, let s, BN_num_bits(r) <= 256, BN_num_bits(s) <= 256 else {
            throw OpenSSL.invalid(.invalidInput, "ECDSA signature component longer than 32 bytes")
        }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { out -> Bool in
            guard let base = out.baseAddress else { return false }
            return BN_bn2binpad(r, base, 32) == 32 && BN_bn2binpad(s, base + 32, 32) == 32
        }
        guard written else { throw OpenSSL.error("BN_bn2binpad") }
        rawRepresentation = raw
    }

    /// The DER `ECDSA-Sig-Value` encoding, as OpenSSL verification expects.
    ///
    /// Empty only if OpenSSL fails to allocate.
    public var derRepresentation: [UInt8] {
        guard let sig = ECDSA_SIG_new() else { return [] }
        defer { ECDSA_SIG_free(sig) }
        let components = rawRepresentation.withUnsafeBufferPointer { raw -> (OpaquePointer?, OpaquePointer?) in
            guard let base = raw.baseAddress else { return (nil, nil) }
            return (BN_bin2bn(base, 32, nil), BN_bin2bn(base + 32, 32, nil))
        }
        guard let r = components.0, let s = components.1, ECDSA_SIG_set0(sig, r, s) == 1 else {
            BN_free(components.0)
            BN_free(components.1)
            ERR_clear_error()
            return []
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else {
            ERR_clear_error()
            return []
        }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor = out.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        guard written == length else {
            ERR_clear_error()
            return []
        }
        return der
    }
}
