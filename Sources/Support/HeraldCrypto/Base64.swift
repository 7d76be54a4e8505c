import HeraldSodium

/// Strict Base64 (RFC 4648 §4) and base64url (RFC 4648 §5) encoding and decoding.
///
/// Encoding is Herald's own (``HandWrittenBase64``), decoding is libsodium's (`sodium_base642bin`,
/// through HeraldSodium's ``SodiumBase64``): each is the faster one in `herald-bench libs`
/// (BENCHMARKS.md, "Library vs hand-written").
public enum Base64 {
    /// Encodes `bytes` as standard Base64 with `=` padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        HandWrittenBase64.encode(bytes)
    }

    /// Decodes standard Base64.
    ///
    /// Strict: only the standard alphabet, length a multiple of 4 with correct `=` padding, no whitespace or line
    /// breaks, and the unused trailing bits of the last character must be zero.
    /// - Throws: ``CryptoError/Code/invalidBase64``.
    public static func decode(_ text: String) throws(CryptoError) -> [UInt8] {
        try decode(text, .original)
    }

    /// Encodes `bytes` as base64url without padding (as used by JOSE and Web Push).
    public static func urlEncode(_ bytes: [UInt8]) -> String {
        HandWrittenBase64.urlEncode(bytes)
    }

    /// Decodes base64url, with or without `=` padding (if present, padding must be correct).
    ///
    /// Strict otherwise: only the URL-safe alphabet, no whitespace, zero trailing bits.
    /// - Throws: ``CryptoError/Code/invalidBase64``.
    public static func urlDecode(_ text: String) throws(CryptoError) -> [UInt8] {
        try decode(text, text.utf8.last == UInt8(ascii: "=") ? .urlSafe : .urlSafeNoPadding)
    }

    /// Decodes text in either the standard or the URL-safe alphabet (not mixed), padded or not.
    ///
    /// Meant for Web Push subscription keys, which some clients send in standard Base64.
    /// - Throws: ``CryptoError/Code/invalidBase64``.
    public static func decodeEitherAlphabet(_ text: String) throws(CryptoError) -> [UInt8] {
        // The alphabet is the one whose own characters appear (a mix fails in either); the padding is
        // checked when present.
        let standard = text.utf8.contains { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
        let padded = text.utf8.last == UInt8(ascii: "=")
        let variant: SodiumBase64.Variant =
            standard ? (padded ? .original : .originalNoPadding) : (padded ? .urlSafe : .urlSafeNoPadding)
        return try decode(text, variant)
    }

    /// Decodes `text` with libsodium in `variant`; its failure becomes ``CryptoError/Code/invalidBase64``.
    private static func decode(_ text: String, _ variant: SodiumBase64.Variant) throws(CryptoError) -> [UInt8] {
        do throws(SodiumError) {
            return try SodiumBase64.decode(text, variant: variant)
        } catch {
            throw CryptoError(code: .invalidBase64, call: error.call, message: error.message)
        }
    }
}
