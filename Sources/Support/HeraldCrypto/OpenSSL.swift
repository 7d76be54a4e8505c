import CHeraldShims
import COpenSSL

/// Internal helpers shared by the OpenSSL wrappers: error-queue draining and algorithms fetched once.
enum OpenSSL {
    /// Drains the calling thread's OpenSSL error queue and returns its entries joined by `"; "`.
    static func drainErrorQueue() -> String {
        var entries: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            buffer.withUnsafeMutableBufferPointer { ERR_error_string_n(code, $0.baseAddress, $0.count) }
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            entries.append(String(decoding: bytes, as: UTF8.self))
        }
        return entries.joined(separator: "; ")
    }

    /// Builds a ``CryptoError`` for a failed C call, draining the OpenSSL error queue into its message.
    static func error(_ call: String, _ code: CryptoError.Code = .openssl, _ context: String = "") -> CryptoError {
        let queue = drainErrorQueue()
        var message = context.isEmpty ? "\(call) failed" : context
        message += queue.isEmpty ? " (OpenSSL error queue empty)" : " (\(queue))"
        return CryptoError(code: code, call: call, message: message)
    }

    /// Builds a ``CryptoError`` for a failure detected in Swift (no C call involved).
    static func invalid(_ code: CryptoError.Code, _ message: String) -> CryptoError {
        CryptoError(code: code, call: "", message: message)
    }

    // Fetched algorithm objects are immutable, reference-counted and documented by OpenSSL as safe to share
    // between threads, so these globals are read-only shared state; `nonisolated(unsafe)` only because
    // `OpaquePointer` is not `Sendable`.

    /// SHA-256, fetched once (`EVP_MD_fetch`).
    nonisolated(unsafe) static let sha256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)
    /// AES-128-GCM, fetched once (`EVP_CIPHER_fetch`).
    nonisolated(unsafe) static let aes128GCM: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)
    /// AES-256-GCM, fetched once (`EVP_CIPHER_fetch`).
    nonisolated(unsafe) static let aes256GCM: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)

    /// Reusable `EVP_MD_CTX`s for HMAC-SHA-256 (each use starts with `EVP_DigestInit_ex2`).
    static let digestContexts = ContextPool(make: { EVP_MD_CTX_new() }, destroy: { EVP_MD_CTX_free($0) })

    /// Reusable `EVP_CIPHER_CTX`s (re-initialised by every `EVP_EncryptInit_ex2`/`EVP_DecryptInit_ex2`).
    static let cipherContexts = ContextPool(make: { EVP_CIPHER_CTX_new() }, destroy: { EVP_CIPHER_CTX_free($0) })

    /// A key holding only the P-256 domain parameters: the template that imported public keys duplicate.
    nonisolated(unsafe) static let p256Parameters: OpaquePointer? = {
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(ctx) }
        var parameters: OpaquePointer?
        guard EVP_PKEY_paramgen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "prime256v1") == 1,
            EVP_PKEY_paramgen(ctx, &parameters) == 1
        else {
            ERR_clear_error()
            return nil
        }
        return parameters
    }()

    /// P-256 key-generation contexts, ready for `EVP_PKEY_generate` (group already set).
    static let p256KeygenContexts = ContextPool(
        make: {
            guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
            guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_group_name(ctx, "prime256v1") == 1 else {
                EVP_PKEY_CTX_free(ctx)
                return nil
            }
            return ctx
        },
        destroy: { EVP_PKEY_CTX_free($0) })

    /// Reads the uncompressed (65-byte) public point of an EC `EVP_PKEY`.
    static func uncompressedPublicKey(of pkey: OpaquePointer) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 65)
        var length = 0
        let status = out.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_octet_string_param(pkey, "pub", $0.baseAddress, $0.count, &length)
        }
        if status == 1, length == 65, out[0] == 0x04 { return out }
        ERR_clear_error()
        // The key may carry a compressed encoding; rebuild the uncompressed form from the affine coordinates.
        var result: [UInt8] = [0x04]
        for name in ["qx", "qy"] {
            var bn: OpaquePointer?
            guard EVP_PKEY_get_bn_param(pkey, name, &bn) == 1, let bn else {
                throw error("EVP_PKEY_get_bn_param", .invalidKey, "cannot read EC public key coordinate \(name)")
            }
            defer { BN_free(bn) }
            var coordinate = [UInt8](repeating: 0, count: 32)
            let written = coordinate.withUnsafeMutableBufferPointer { BN_bn2binpad(bn, $0.baseAddress, 32) }
            guard written == 32 else { throw error("BN_bn2binpad", .invalidKey, "EC coordinate longer than 32 bytes") }
            result += coordinate
        }
        return result
    }

    /// Returns the group name of an EC key, or `nil`.
    static func groupName(of pkey: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        let status = buffer.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_utf8_string_param(pkey, "group", $0.baseAddress, $0.count, &length)
        }
        guard status == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Parses a PEM private key with `PEM_read_bio_PrivateKey`, never prompting for a passphrase.
    static func readPrivateKeyPEM(_ pem: String) throws(CryptoError) -> OpaquePointer {
        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty, bytes.count < Int(Int32.max) else { throw invalid(.invalidPEM, "empty or oversized PEM") }
        let pkey: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A non-NULL empty passphrase makes encrypted keys fail instead of prompting on the terminal.
            return "".withCString { PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: $0)) }
        }
        guard let pkey else { throw error("PEM_read_bio_PrivateKey", .invalidPEM, "cannot parse PEM private key") }
        // Decoders tried and rejected on the way to success leave entries behind; do not let them leak into the
        // message of a later, unrelated error.
        ERR_clear_error()
        return pkey
    }

    /// Signs `message` with `pkey` using `EVP_DigestSign` over SHA-256; returns OpenSSL's native signature encoding.
    static func digestSignSHA256(_ pkey: OpaquePointer, _ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let mdctx = EVP_MD_CTX_new() else { throw error("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(mdctx) }
        guard EVP_DigestSignInit_ex(mdctx, nil, "SHA256", nil, nil, pkey, nil) == 1 else {
            throw error("EVP_DigestSignInit_ex")
        }
        var length = 0
        let sizing = message.withUnsafeBufferPointer { EVP_DigestSign(mdctx, nil, &length, $0.baseAddress, $0.count) }
        guard sizing == 1, length > 0 else { throw error("EVP_DigestSign") }
        var signature = [UInt8](repeating: 0, count: length)
        let status = signature.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBufferPointer {
                EVP_DigestSign(mdctx, out.baseAddress, &length, $0.baseAddress, $0.count)
            }
        }
        guard status == 1 else { throw error("EVP_DigestSign") }
        return Array(signature.prefix(length))
    }
}
