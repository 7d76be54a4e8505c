import COpenSSL

/// HMAC-SHA-256 (RFC 2104) through OpenSSL's `EVP_MAC` API.
public enum HMACSHA256 {
    /// Returns the 32-byte HMAC-SHA-256 of `message` under `key`.
    ///
    /// Any key length is accepted (an empty key behaves as specified by RFC 2104, i.e. like an all-zero key).
    /// Returns an empty array only if OpenSSL itself fails (allocation failure); it never traps.
    public static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        (try? compute(key: key, message: message)) ?? []
    }

    /// Checks a full 32-byte HMAC-SHA-256 `mac` of `message` under `key` with a constant-time comparison.
    ///
    /// Truncated MACs are rejected.
    public static func isValid(_ mac: [UInt8], key: [UInt8], message: [UInt8]) -> Bool {
        guard mac.count == 32 else { return false }
        let expected = authenticationCode(key: key, message: message)
        return expected.count == 32 && ConstantTime.equals(expected, mac)
    }

    /// Throwing variant used internally (HKDF), so that OpenSSL failures surface as ``CryptoError``.
    static func compute(key: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let ctx = OpenSSL.hmacContexts.take() else {
            throw OpenSSL.error("EVP_MAC_CTX_new", .openssl, "HMAC-SHA256 is unavailable")
        }
        // HMAC pads keys shorter than the block with zeros, so an empty key equals a one-byte zero key; a non-empty
        // buffer is always passed because a NULL key would make EVP_MAC_init keep the previous user's key.
        let effectiveKey = key.isEmpty ? [0] : key
        let initStatus = effectiveKey.withUnsafeBufferPointer { EVP_MAC_init(ctx, $0.baseAddress, $0.count, nil) }
        guard initStatus == 1 else {
            OpenSSL.hmacContexts.discard(ctx)
            throw OpenSSL.error("EVP_MAC_init")
        }
        if !message.isEmpty {
            let status = message.withUnsafeBufferPointer { EVP_MAC_update(ctx, $0.baseAddress, $0.count) }
            guard status == 1 else {
                OpenSSL.hmacContexts.discard(ctx)
                throw OpenSSL.error("EVP_MAC_update")
            }
        }
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        let status = out.withUnsafeMutableBufferPointer { EVP_MAC_final(ctx, $0.baseAddress, &length, $0.count) }
        guard status == 1, length == 32 else {
            OpenSSL.hmacContexts.discard(ctx)
            throw OpenSSL.error("EVP_MAC_final")
        }
        OpenSSL.hmacContexts.give(ctx)
        return out
    }
}
