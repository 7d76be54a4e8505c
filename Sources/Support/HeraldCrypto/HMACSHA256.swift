import COpenSSL

/// HMAC-SHA-256 (RFC 2104, FIPS 198-1) over OpenSSL's EVP SHA-256 digest.
///
/// The HMAC construction `H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m))` is composed here from `EVP_DigestInit_ex2`/
/// `EVP_DigestUpdate`/`EVP_DigestFinal_ex` on a pooled `EVP_MD_CTX`. Going through `EVP_MAC` instead costs about
/// twice as much for the short inputs of HKDF and JWS: `HMAC_Init_ex` and `HMAC_Final` copy three digest contexts
/// (each copy allocates a provider context) per MAC. The RFC 4231 vectors check this construction.
public enum HMACSHA256 {
    /// SHA-256 block size in bytes.
    static let blockLength = 64
    /// SHA-256 output size in bytes.
    static let macLength = 32

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

    /// Throwing variant used internally (HKDF, JWS), so that OpenSSL failures surface as ``CryptoError``.
    static func compute(key: [UInt8], message: [UInt8]) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: macLength)
        let failure = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                out.withUnsafeMutableBufferPointer { o in mac(key: k, into: o.baseAddress!) { ctx in update(ctx, m) } }
            }
        }
        if let failure { throw failure }
        return out
    }

    /// `EVP_DigestUpdate` of a raw buffer; an empty buffer is a successful no-op.
    @inline(__always)
    static func update(_ ctx: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.isEmpty || EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count) == 1
    }

    /// Computes HMAC-SHA-256 under `key` of the message that `feed` passes to `EVP_DigestUpdate` on the inner
    /// digest context (it returns `false` if an update failed), writing the 32-byte MAC to `out`.
    ///
    /// `out` may alias memory that `feed` reads (HKDF-Expand feeds the previous block): the MAC is only written
    /// after `feed` has run. Returns the error instead of throwing it, so that callers can run it inside
    /// `withUnsafeBytes` closures (which are not typed-throws).
    static func mac(
        key: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>, feed: (OpaquePointer) -> Bool
    ) -> CryptoError? {
        guard let md = OpenSSL.sha256 else { return OpenSSL.error("EVP_MD_fetch", .openssl, "SHA-256 is unavailable") }
        guard let ctx = OpenSSL.digestContexts.take() else {
            return OpenSSL.error("EVP_MD_CTX_new", .openssl, "HMAC-SHA256 is unavailable")
        }
        // Stack scratch: the padded key block (64) followed by the inner hash (32); wiped before returning.
        var failed: String?
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: blockLength + macLength) { scratch in
            let block = scratch.baseAddress!
            let inner = block + blockLength
            defer { OPENSSL_cleanse(block, blockLength + macLength) }
            block.initialize(repeating: 0, count: blockLength + macLength)
            // K0: keys longer than the block are hashed first; shorter ones are zero-padded (RFC 2104 §2).
            if key.count > blockLength {
                var length: UInt32 = 0
                guard EVP_DigestInit_ex2(ctx, md, nil) == 1, update(ctx, key),
                    EVP_DigestFinal_ex(ctx, block, &length) == 1, length == UInt32(macLength)
                else {
                    failed = "EVP_Digest (HMAC key)"
                    return
                }
            } else if !key.isEmpty {
                block.update(from: key.baseAddress!.assumingMemoryBound(to: UInt8.self), count: key.count)
            }
            for i in 0..<blockLength { block[i] ^= 0x36 }
            var length: UInt32 = 0
            guard EVP_DigestInit_ex2(ctx, md, nil) == 1, EVP_DigestUpdate(ctx, block, blockLength) == 1 else {
                failed = "EVP_DigestInit_ex2"
                return
            }
            guard feed(ctx) else {
                failed = "EVP_DigestUpdate"
                return
            }
            guard EVP_DigestFinal_ex(ctx, inner, &length) == 1, length == UInt32(macLength) else {
                failed = "EVP_DigestFinal_ex"
                return
            }
            for i in 0..<blockLength { block[i] ^= 0x36 ^ 0x5C }
            guard EVP_DigestInit_ex2(ctx, md, nil) == 1, EVP_DigestUpdate(ctx, block, blockLength) == 1,
                EVP_DigestUpdate(ctx, inner, macLength) == 1, EVP_DigestFinal_ex(ctx, out, &length) == 1,
                length == UInt32(macLength)
            else {
                failed = "EVP_Digest (HMAC outer hash)"
                return
            }
        }
        if let failed {
            OpenSSL.digestContexts.discard(ctx)
            return OpenSSL.error(failed)
        }
        OpenSSL.digestContexts.give(ctx)
        return nil
    }
}
