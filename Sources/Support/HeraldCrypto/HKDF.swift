/// HKDF with SHA-256 (RFC 5869), composed from ``HMACSHA256``.
public enum HKDF {
    /// HKDF-Extract: `PRK = HMAC-SHA-256(salt, IKM)`.
    ///
    /// An empty `salt` is equivalent to 32 zero bytes, as RFC 5869 specifies.
    /// Returns an empty array only if OpenSSL itself fails.
    public static func extract(salt: [UInt8], inputKeyMaterial: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(key: salt, message: inputKeyMaterial)
    }

    /// HKDF-Expand: derives `length` bytes from `pseudoRandomKey` and `info`.
    /// - Throws: ``CryptoError/Code/invalidInput`` unless `1 <= length <= 8160` (255 × 32);
    ///   ``CryptoError/Code/invalidKey`` if `pseudoRandomKey` is shorter than 32 bytes.
    public static func expand(pseudoRandomKey: [UInt8], info: [UInt8], length: Int) throws(CryptoError) -> [UInt8] {
        guard length >= 1, length <= 255 * 32 else {
            throw OpenSSL.invalid(.invalidInput, "HKDF output length \(length) is outside 1...8160")
        }
        guard pseudoRandomKey.count >= 32 else {
            throw OpenSSL.invalid(.invalidKey, "HKDF pseudorandom key must be at least 32 bytes")
        }
        // T(i) = HMAC(PRK, T(i-1) ‖ info ‖ i), written block by block into one buffer (T(i-1) is read in place);
        // the buffer is rounded up to whole blocks and trimmed at the end.
        let blocks = (length + 31) / 32
        var output = [UInt8](repeating: 0, count: blocks * 32)
        let failure = pseudoRandomKey.withUnsafeBytes { key in
            info.withUnsafeBytes { infoBytes in
                output.withUnsafeMutableBufferPointer { out -> CryptoError? in
                    let base = out.baseAddress!
                    for index in 0..<blocks {
                        var counter = UInt8(index + 1)
                        let previous = UnsafeRawBufferPointer(start: base + max(index - 1, 0) * 32, count: 32)
                        let failure = HMACSHA256.mac(key: key, into: base + index * 32) { ctx in
                            HMACSHA256.update(ctx, index == 0 ? UnsafeRawBufferPointer(start: nil, count: 0) : previous)
                                && HMACSHA256.update(ctx, infoBytes)
                                && withUnsafeBytes(of: &counter) { HMACSHA256.update(ctx, $0) }
                        }
                        if let failure { return failure }
                    }
                    return nil
                }
            }
        }
        if let failure { throw failure }
        if output.count > length { output.removeLast(output.count - length) }
        return output
    }

    /// HKDF-Extract followed by HKDF-Expand.
    /// - Throws: see ``expand(pseudoRandomKey:info:length:)``.
    public static func deriveKey(
        inputKeyMaterial: [UInt8], salt: [UInt8], info: [UInt8], length: Int
    ) throws(CryptoError) -> [UInt8] {
        let prk = extract(salt: salt, inputKeyMaterial: inputKeyMaterial)
        return try expand(pseudoRandomKey: prk, info: info, length: length)
    }
}
