import CSodium

/// libsodium's constant-time Base64 codec (`sodium_bin2base64`, `sodium_base642bin`), RFC 4648 §4
/// (standard) and §5 (URL-safe), with or without `=` padding.
///
/// Decoding is strict: no whitespace or other ignored characters, only the variant's alphabet, padding
/// exactly as the variant requires, and the unused trailing bits of the last character zero.
public enum SodiumBase64 {
    /// An alphabet and padding rule (libsodium's `sodium_base64_VARIANT_*`).
    public enum Variant: Sendable {
        /// `A–Z a–z 0–9 + /`, padded with `=` to a multiple of 4.
        case original
        /// `A–Z a–z 0–9 + /`, no padding.
        case originalNoPadding
        /// `A–Z a–z 0–9 - _`, padded with `=` to a multiple of 4.
        case urlSafe
        /// `A–Z a–z 0–9 - _`, no padding.
        case urlSafeNoPadding

        var raw: Int32 {
            switch self {
            case .original: sodium_base64_VARIANT_ORIGINAL
            case .originalNoPadding: sodium_base64_VARIANT_ORIGINAL_NO_PADDING
            case .urlSafe: sodium_base64_VARIANT_URLSAFE
            case .urlSafeNoPadding: sodium_base64_VARIANT_URLSAFE_NO_PADDING
            }
        }
    }

    /// Encodes `bytes` in `variant`.
    public static func encode(_ bytes: [UInt8], variant: Variant) -> String {
        let raw = variant.raw
        // Includes the terminating NUL that libsodium writes.
        let capacity = sodium_base64_encoded_len(bytes.count, raw)
        return bytes.withUnsafeBufferPointer { input in
            String(unsafeUninitializedCapacity: capacity) { output in
                // `capacity` is at least 1 (the NUL), so the buffer has an address.
                guard let text = output.baseAddress else { return 0 }
                text.withMemoryRebound(to: CChar.self, capacity: capacity) { text in
                    _ = sodium_bin2base64(text, capacity, input.baseAddress, input.count, raw)
                }
                return capacity - 1
            }
        }
    }

    /// Decodes `text` in `variant`.
    /// - Throws: ``SodiumError`` with code `invalidInput` when `text` is not valid in `variant`.
    public static func decode(_ text: String, variant: Variant) throws(SodiumError) -> [UInt8] {
        var text = text
        let result = text.withUTF8 { input in Result { () throws(SodiumError) in try decode(input, variant: variant) } }
        return try result.get()
    }

    /// Decodes the UTF-8 bytes of Base64 text in `variant`.
    /// - Throws: ``SodiumError`` with code `invalidInput` when the text is not valid in `variant`.
    public static func decode(_ input: UnsafeBufferPointer<UInt8>, variant: Variant) throws(SodiumError) -> [UInt8] {
        let capacity = input.count / 4 * 3 + 2
        var decoded = 0
        var status: Int32 = -1
        let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            // `capacity` is at least 2, so the buffer has an address.
            if let bytes = buffer.baseAddress {
                input.withMemoryRebound(to: CChar.self) { text in
                    status = sodium_base642bin(
                        bytes, capacity, text.baseAddress, text.count, nil, &decoded, nil, variant.raw)
                }
            }
            count = status == 0 ? decoded : 0
        }
        guard status == 0 else {
            throw SodiumError(code: .invalidInput, call: "sodium_base642bin", message: "not valid \(variant) Base64")
        }
        return output
    }
}
