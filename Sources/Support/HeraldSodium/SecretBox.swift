import CSodium

/// libsodium's `crypto_secretbox` (XSalsa20-Poly1305) authenticated secret-key encryption.
///
/// ``seal(_:key:nonce:)`` returns libsodium's "easy" layout, `MAC(16) ‖ ciphertext`, which is what
/// `crypto_secretbox_easy` writes. PyNaCl's `SecretBox.encrypt` output (and Home Assistant's
/// `encrypted_data`) is that box with the 24-byte nonce in front: `nonce ‖ MAC ‖ ciphertext`.
///
/// A nonce must never be reused with the same key; use 24 fresh random bytes per message.
public enum SecretBox {
    /// Key length in bytes (`crypto_secretbox_KEYBYTES`).
    public static let keyLength = 32
    /// Nonce length in bytes (`crypto_secretbox_NONCEBYTES`).
    public static let nonceLength = 24
    /// Poly1305 MAC length in bytes (`crypto_secretbox_MACBYTES`); a box is this much longer than its plaintext.
    public static let macLength = 16

    /// Encrypts and authenticates `plaintext` with `crypto_secretbox_easy`.
    /// - Parameters:
    ///   - plaintext: The bytes to encrypt (may be empty).
    ///   - key: ``keyLength`` bytes.
    ///   - nonce: ``nonceLength`` bytes, never reused with the same key.
    /// - Returns: `MAC(16) ‖ ciphertext`, ``macLength`` bytes longer than `plaintext`.
    /// - Throws: ``SodiumError`` for a key or nonce of the wrong length, or if libsodium fails.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(SodiumError) -> [UInt8] {
        let call = "crypto_secretbox_easy"
        try Sodium.ensureInitialized()
        try check(key: key, nonce: nonce, call: call)
        var out = [UInt8](repeating: 0, count: plaintext.count + macLength)
        // A one-byte dummy stands in for an empty plaintext, whose buffer may have no base address.
        let input = plaintext.isEmpty ? [0] : plaintext
        let rc = withAddresses(&out, input, nonce, key) { o, m, n, k in
            crypto_secretbox_easy(o, m, UInt64(plaintext.count), n, k)
        }
        guard rc == 0 else { throw SodiumError(code: .sodium, call: call, message: "returned \(rc)") }
        return out
    }

    /// Verifies and decrypts a box made by ``seal(_:key:nonce:)`` with `crypto_secretbox_open_easy`.
    /// - Parameters:
    ///   - box: `MAC(16) ‖ ciphertext` (without the nonce).
    ///   - key: ``keyLength`` bytes.
    ///   - nonce: The ``nonceLength`` bytes the box was sealed with.
    /// - Returns: The plaintext.
    /// - Throws: ``SodiumError`` with code `authenticationFailed` when the MAC does not verify (wrong key,
    ///   wrong nonce, tampered data), `invalidInput` for a box shorter than ``macLength``, `invalidKey` /
    ///   `invalidNonce` for wrong lengths.
    public static func open(_ box: [UInt8], key: [UInt8], nonce: [UInt8]) throws(SodiumError) -> [UInt8] {
        let call = "crypto_secretbox_open_easy"
        try Sodium.ensureInitialized()
        try check(key: key, nonce: nonce, call: call)
        guard box.count >= macLength else {
            throw SodiumError(
                code: .invalidInput, call: call,
                message: "box is \(box.count) bytes, shorter than the \(macLength)-byte MAC")
        }
        // One spare byte keeps the output buffer non-empty for an empty plaintext.
        var out = [UInt8](repeating: 0, count: box.count - macLength + 1)
        let rc = withAddresses(&out, box, nonce, key) { o, c, n, k in
            crypto_secretbox_open_easy(o, c, UInt64(box.count), n, k)
        }
        guard rc == 0 else {
            throw SodiumError(
                code: .authenticationFailed, call: call,
                message: "the MAC did not verify (wrong key or nonce, or tampered data)")
        }
        out.removeLast()
        return out
    }

    private static func check(key: [UInt8], nonce: [UInt8], call: String) throws(SodiumError) {
        guard key.count == keyLength else {
            throw SodiumError(
                code: .invalidKey, call: call, message: "key is \(key.count) bytes, expected \(keyLength)")
        }
        guard nonce.count == nonceLength else {
            throw SodiumError(
                code: .invalidNonce, call: call, message: "nonce is \(nonce.count) bytes, expected \(nonceLength)")
        }
    }

    /// Calls `body` with the base addresses of the output, input, nonce and key buffers; -1 when one has
    /// none. Every buffer is non-empty at the callers (lengths checked, a spare byte for empty data), so
    /// the addresses exist.
    private static func withAddresses(
        _ out: inout [UInt8], _ input: [UInt8], _ nonce: [UInt8], _ key: [UInt8],
        _ body: (UnsafeMutablePointer<UInt8>, UnsafePointer<UInt8>, UnsafePointer<UInt8>, UnsafePointer<UInt8>) ->
            Int32
    ) -> Int32 {
        out.withUnsafeMutableBufferPointer { o in
            input.withUnsafeBufferPointer { i in
                nonce.withUnsafeBufferPointer { n in
                    key.withUnsafeBufferPointer { k -> Int32 in
                        guard let o = o.baseAddress, let i = i.baseAddress, let n = n.baseAddress, let k = k.baseAddress
                        else { return -1 }
                        return body(o, i, n, k)
                    }
                }
            }
        }
    }
}

/// Process-wide libsodium setup.
enum Sodium {
    /// The result of the one `sodium_init()` call: `nil` on success, else the error. Swift runs a
    /// global's initialiser exactly once, thread-safely (and `sodium_init` is itself idempotent).
    private static let initResult: SodiumError? = {
        let rc = sodium_init()
        // 0 = initialised now, 1 = already initialised; -1 = failure.
        guard rc >= 0 else {
            return SodiumError(code: .initializationFailed, call: "sodium_init", message: "returned \(rc)")
        }
        guard crypto_secretbox_keybytes() == SecretBox.keyLength,
            crypto_secretbox_noncebytes() == SecretBox.nonceLength,
            crypto_secretbox_macbytes() == SecretBox.macLength
        else {
            return SodiumError(
                code: .initializationFailed, call: "crypto_secretbox_keybytes",
                message: "libsodium's secretbox sizes differ from 32/24/16")
        }
        return nil
    }()

    /// Throws the `sodium_init()` failure, if any.
    static func ensureInitialized() throws(SodiumError) {
        if let e = initResult { throw e }
    }
}
