import COpenSSL

/// AES-GCM authenticated encryption (NIST SP 800-38D) with a 12-byte nonce and a 16-byte tag.
///
/// A 16-byte key selects AES-128-GCM, a 32-byte key AES-256-GCM.
public enum AESGCM {
    /// Length of the authentication tag appended to the ciphertext.
    public static let tagLength = 16
    /// Required nonce length.
    public static let nonceLength = 12

    /// Encrypts and authenticates `plaintext`, returning `ciphertext || tag`.
    /// - Parameters:
    ///   - plaintext: The data to encrypt (may be empty).
    ///   - key: 16 bytes (AES-128) or 32 bytes (AES-256).
    ///   - nonce: 12 bytes; never reuse a nonce with the same key.
    ///   - aad: Additional authenticated data (not encrypted).
    /// - Throws: ``CryptoError/Code/invalidKey`` for a bad key length, ``CryptoError/Code/invalidInput`` for a bad
    ///   nonce length or oversized input, ``CryptoError/Code/openssl`` if OpenSSL fails.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], authenticating aad: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        let ctx = try makeContext(
            key: key, nonce: nonce, aadCount: aad.count, dataCount: plaintext.count, encrypt: true)
        try feedAAD(ctx, aad, encrypt: true)
        // Every byte of the output is written below (ciphertext, then tag), so it is not zero-filled first.
        var status: Int32 = 0
        let output = [UInt8](unsafeUninitializedCapacity: plaintext.count + tagLength) { out, initialized in
            status = sealInto(ctx, plaintext, out)
            initialized = status == 1 ? out.count : 0
        }
        return try finish(ctx, status: status, output) { status in
            switch status {
            case -1: OpenSSL.error("EVP_EncryptUpdate")
            case -2: OpenSSL.error("EVP_EncryptFinal_ex")
            default: OpenSSL.error("EVP_CIPHER_CTX_ctrl", .openssl, "cannot read the GCM tag")
            }
        }
    }

    /// Gives the context back to the pool and returns `output` when `status` is 1; otherwise discards the
    /// context and throws the error `failure` names for the failed step.
    private static func finish(
        _ ctx: OpaquePointer, status: Int32, _ output: [UInt8], _ failure: (Int32) -> CryptoError
    ) throws(CryptoError) -> [UInt8] {
        guard status == 1 else {
            OpenSSL.cipherContexts.discard(ctx)
            throw failure(status)
        }
        OpenSSL.cipherContexts.give(ctx)
        return output
    }

    /// Encrypts `plaintext` into `out` (`plaintext.count + tagLength` bytes) and appends the tag; returns 1 on
    /// success or a negative step number.
    private static func sealInto(
        _ ctx: OpaquePointer, _ plaintext: [UInt8], _ out: UnsafeMutableBufferPointer<UInt8>
    ) -> Int32 {
        guard let base = out.baseAddress else { return 0 }
        var length: Int32 = 0
        if !plaintext.isEmpty {
            let update = plaintext.withUnsafeBufferPointer {
                EVP_EncryptUpdate(ctx, base, &length, $0.baseAddress, Int32($0.count))
            }
            guard update == 1, Int(length) == plaintext.count else { return -1 }
        }
        var finalLength: Int32 = 0
        guard EVP_EncryptFinal_ex(ctx, base + Int(length), &finalLength) == 1 else { return -2 }
        return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tagLength), base + plaintext.count) == 1
            ? 1 : -3
    }

    /// Verifies and decrypts `ciphertext || tag`.
    /// - Throws: ``CryptoError/Code/authenticationFailed`` if the tag does not verify (wrong key, nonce, AAD or
    ///   tampered data); ``CryptoError/Code/invalidInput`` if the input is shorter than the 16-byte tag or the nonce
    ///   is not 12 bytes; ``CryptoError/Code/invalidKey`` for a bad key length.
    public static func open(
        _ ciphertextAndTag: [UInt8], key: [UInt8], nonce: [UInt8], authenticating aad: [UInt8] = []
    ) throws(CryptoError) -> [UInt8] {
        guard ciphertextAndTag.count >= tagLength else {
            throw OpenSSL.invalid(
                .invalidInput, "AES-GCM input of \(ciphertextAndTag.count) bytes is shorter than the tag")
        }
        let dataCount = ciphertextAndTag.count - tagLength
        let ctx = try makeContext(key: key, nonce: nonce, aadCount: aad.count, dataCount: dataCount, encrypt: false)
        try feedAAD(ctx, aad, encrypt: false)
        var output = [UInt8](repeating: 0, count: dataCount)
        let status: Int32 = ciphertextAndTag.withUnsafeBufferPointer { input in
            guard let inBase = input.baseAddress else { return 0 }
            return output.withUnsafeMutableBufferPointer { out in
                var length: Int32 = 0
                if dataCount > 0 {
                    guard EVP_DecryptUpdate(ctx, out.baseAddress, &length, inBase, Int32(dataCount)) == 1,
                        Int(length) == dataCount
                    else { return -1 }
                }
                var tag = Array(input[dataCount...])
                let setTag = tag.withUnsafeMutableBytes {
                    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagLength), $0.baseAddress)
                }
                guard setTag == 1 else { return -2 }
                var finalLength: Int32 = 0
                var scratch = [UInt8](repeating: 0, count: 16)
                return scratch.withUnsafeMutableBufferPointer {
                    EVP_DecryptFinal_ex(ctx, $0.baseAddress, &finalLength) == 1 ? 1 : -3
                }
            }
        }
        return try finish(ctx, status: status, output) { status in
            switch status {
            case -1: OpenSSL.error("EVP_DecryptUpdate")
            case -2: OpenSSL.error("EVP_CIPHER_CTX_ctrl", .openssl, "cannot set the GCM tag")
            default: OpenSSL.error("EVP_DecryptFinal_ex", .authenticationFailed, "AES-GCM authentication tag mismatch")
            }
        }
    }

    private static func makeContext(
        key: [UInt8], nonce: [UInt8], aadCount: Int, dataCount: Int, encrypt: Bool
    ) throws(CryptoError) -> OpaquePointer {
        let cipher: OpaquePointer?
        switch key.count {
        case 16: cipher = OpenSSL.aes128GCM
        case 32: cipher = OpenSSL.aes256GCM
        default: throw OpenSSL.invalid(.invalidKey, "AES-GCM key must be 16 or 32 bytes, got \(key.count)")
        }
        guard nonce.count == nonceLength else {
            throw OpenSSL.invalid(.invalidInput, "AES-GCM nonce must be \(nonceLength) bytes, got \(nonce.count)")
        }
        guard aadCount < Int(Int32.max), dataCount < Int(Int32.max) else {
            throw OpenSSL.invalid(.invalidInput, "AES-GCM input too large")
        }
        guard let cipher else { throw OpenSSL.error("EVP_CIPHER_fetch", .openssl, "AES-GCM is unavailable") }
        guard let ctx = OpenSSL.cipherContexts.take() else { throw OpenSSL.error("EVP_CIPHER_CTX_new") }
        // A pooled context that last ran the same cipher keeps its provider context: passing a NULL cipher
        // re-keys it (new key schedule, new IV, fresh GCM state) instead of freeing and allocating a new one.
        let sameCipher = EVP_CIPHER_CTX_get0_cipher(ctx) == cipher
        let initCipher = sameCipher ? nil : cipher
        let status = key.withUnsafeBufferPointer { k in
            nonce.withUnsafeBufferPointer { n in
                encrypt
                    ? EVP_EncryptInit_ex2(ctx, initCipher, k.baseAddress, n.baseAddress, nil)
                    : EVP_DecryptInit_ex2(ctx, initCipher, k.baseAddress, n.baseAddress, nil)
            }
        }
        guard status == 1 else {
            OpenSSL.cipherContexts.discard(ctx)
            throw OpenSSL.error(encrypt ? "EVP_EncryptInit_ex2" : "EVP_DecryptInit_ex2")
        }
        return ctx
    }

    private static func feedAAD(_ ctx: OpaquePointer, _ aad: [UInt8], encrypt: Bool) throws(CryptoError) {
        guard !aad.isEmpty else { return }
        var length: Int32 = 0
        let status = aad.withUnsafeBufferPointer {
            encrypt
                ? EVP_EncryptUpdate(ctx, nil, &length, $0.baseAddress, Int32($0.count))
                : EVP_DecryptUpdate(ctx, nil, &length, $0.baseAddress, Int32($0.count))
        }
        guard status == 1 else {
            OpenSSL.cipherContexts.discard(ctx)
            throw OpenSSL.error(encrypt ? "EVP_EncryptUpdate" : "EVP_DecryptUpdate")
        }
    }
}
