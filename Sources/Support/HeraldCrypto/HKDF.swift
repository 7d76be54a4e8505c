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
        var output: [UInt8] = []
        output.reserveCapacity(length + 32)
        var block: [UInt8] = []
        var counter: UInt8 = 1
        while output.count < length {
            var message = block
            message.reserveCapacity(block.count + info.count + 1)
            message += info
            message.append(counter)
            block = try HMACSHA256.compute(key: pseudoRandomKey, message: message)
            output += block
            counter &+= 1
        }
        output.removeLast(output.count - length)
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
