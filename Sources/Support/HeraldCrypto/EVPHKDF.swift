import COpenSSL

/// HKDF-SHA-256 (RFC 5869) through OpenSSL's `EVP_KDF` "HKDF" (extract-only and expand-only modes).
///
/// Kept beside ``HKDF`` (which composes HMAC-SHA-256 itself) so that `herald-bench libs` can measure
/// both on the same run; the RFC 5869 vectors check both. ``HKDF`` is the one Herald uses: see
/// BENCHMARKS.md, "Library vs hand-written".
package enum EVPHKDF {
    /// The HKDF algorithm, fetched once (`EVP_KDF_fetch`); immutable and shareable between threads.
    nonisolated(unsafe) private static let kdf: OpaquePointer? = EVP_KDF_fetch(nil, "HKDF", nil)

    private static let digestName: StaticString = "SHA256"

    /// HKDF-Extract: `PRK = HMAC-SHA-256(salt, IKM)` (32 bytes).
    package static func extract(salt: [UInt8], inputKeyMaterial: [UInt8]) throws(CryptoError) -> [UInt8] {
        try derive(
            mode: EVP_KDF_HKDF_MODE_EXTRACT_ONLY, key: inputKeyMaterial, extra: salt, extraName: "salt", length: 32)
    }

    /// HKDF-Expand: `length` bytes from `pseudoRandomKey` and `info`.
    /// - Throws: ``CryptoError/Code/invalidInput`` unless `1 <= length <= 8160`;
    ///   ``CryptoError/Code/invalidKey`` if `pseudoRandomKey` is shorter than 32 bytes.
    package static func expand(pseudoRandomKey: [UInt8], info: [UInt8], length: Int) throws(CryptoError) -> [UInt8] {
        guard length >= 1, length <= 255 * 32 else {
            throw OpenSSL.invalid(.invalidInput, "HKDF output length \(length) is outside 1...8160")
        }
        guard pseudoRandomKey.count >= 32 else {
            throw OpenSSL.invalid(.invalidKey, "HKDF pseudorandom key must be at least 32 bytes")
        }
        return try derive(
            mode: EVP_KDF_HKDF_MODE_EXPAND_ONLY, key: pseudoRandomKey, extra: info, extraName: "info", length: length)
    }

    private static func derive(
        mode: Int32, key: [UInt8], extra: [UInt8], extraName: StaticString, length: Int
    ) throws(CryptoError) -> [UInt8] {
        guard let kdf, let ctx = EVP_KDF_CTX_new(kdf) else { throw OpenSSL.error("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(ctx) }
        var mode = mode
        var key = key
        var extra = extra
        var output = [UInt8](repeating: 0, count: length)
        let ok = withUnsafeMutablePointer(to: &mode) { modePointer in
            key.withUnsafeMutableBytes { keyBytes in
                extra.withUnsafeMutableBytes { extraBytes in
                    output.withUnsafeMutableBytes { out -> Bool in
                        // Parameter names and the digest name are static C strings: they outlive the call.
                        func name(_ text: StaticString) -> UnsafePointer<CChar> {
                            UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
                        }
                        var params = [
                            OSSL_PARAM_construct_utf8_string(
                                name("digest"), UnsafeMutablePointer(mutating: name(digestName)), 0),
                            OSSL_PARAM_construct_int(name("mode"), modePointer),
                            OSSL_PARAM_construct_octet_string(name("key"), keyBytes.baseAddress, keyBytes.count),
                            OSSL_PARAM_construct_end(),
                            OSSL_PARAM_construct_end(),
                        ]
                        if !extraBytes.isEmpty {
                            params[3] = OSSL_PARAM_construct_octet_string(
                                name(extraName), extraBytes.baseAddress, extraBytes.count)
                        }
                        return EVP_KDF_derive(ctx, out.baseAddress, out.count, &params) == 1
                    }
                }
            }
        }
        guard ok else { throw OpenSSL.error("EVP_KDF_derive") }
        return output
    }
}
