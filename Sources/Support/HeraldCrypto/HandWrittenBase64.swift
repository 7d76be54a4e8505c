/// Strict Base64 (RFC 4648 §4) and base64url (RFC 4648 §5), written in Swift: the reference
/// `herald-bench libs` measures libsodium's codec against (BENCHMARKS.md, "Library vs hand-written").
/// ``Base64`` is what Herald calls.
package enum HandWrittenBase64 {
    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private enum Alphabet {
        case standard
        case url
        case either
    }

    private enum Padding {
        case required
        case optional
    }

    /// Encodes `bytes` as standard Base64 with `=` padding.
    package static func encode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: standardAlphabet, pad: true)
    }

    /// Decodes standard Base64.
    ///
    /// Strict: only the standard alphabet, length a multiple of 4 with correct `=` padding, no whitespace or line
    /// breaks, and the unused trailing bits of the last character must be zero.
    /// - Throws: ``CryptoError/Code/invalidBase64``.
    package static func decode(_ text: String) throws(CryptoError) -> [UInt8] {
        try decode(text, alphabet: .standard, padding: .required)
    }

    /// Encodes `bytes` as base64url without padding (as used by JOSE and Web Push).
    package static func urlEncode(_ bytes: [UInt8]) -> String {
        encode(bytes, alphabet: urlAlphabet, pad: false)
    }

    /// Decodes base64url, with or without `=` padding (if present, padding must be correct).
    ///
    /// Strict otherwise: only the URL-safe alphabet, no whitespace, zero trailing bits.
    /// - Throws: ``CryptoError/Code/invalidBase64``.
    package static func urlDecode(_ text: String) throws(CryptoError) -> [UInt8] {
        try decode(text, alphabet: .url, padding: .optional)
    }

    /// Decodes text in either the standard or the URL-safe alphabet (not mixed), padded or not.
    ///
    /// Meant for Web Push subscription keys, which some clients send in standard Base64.
    /// - Throws: ``CryptoError/Code/invalidBase64``.
    package static func decodeEitherAlphabet(_ text: String) throws(CryptoError) -> [UInt8] {
        try decode(text, alphabet: .either, padding: .optional)
    }

    private static func encode(_ bytes: [UInt8], alphabet: [UInt8], pad: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            out.append(alphabet[Int(value & 63)])
            index += 3
        }
        let remaining = bytes.count - index
        if remaining == 1 {
            let value = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            if pad { out += [UInt8(ascii: "="), UInt8(ascii: "=")] }
        } else if remaining == 2 {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(value >> 18 & 63)])
            out.append(alphabet[Int(value >> 12 & 63)])
            out.append(alphabet[Int(value >> 6 & 63)])
            if pad { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func failure(_ message: String) -> CryptoError {
        CryptoError(code: .invalidBase64, call: "", message: message)
    }

    private static func decode(_ text: String, alphabet: Alphabet, padding: Padding) throws(CryptoError) -> [UInt8] {
        var input = Array(text.utf8)
        // Split off the padding.
        var padCount = 0
        while let last = input.last, last == UInt8(ascii: "=") {
            input.removeLast()
            padCount += 1
        }
        if padCount > 2 { throw failure("too much '=' padding") }
        let remainder = input.count % 4
        if remainder == 1 { throw failure("impossible Base64 length") }
        let expectedPad = remainder == 0 ? 0 : 4 - remainder
        switch padding {
        case .required:
            if padCount != expectedPad { throw failure("incorrect '=' padding") }
        case .optional:
            if padCount != 0 && padCount != expectedPad { throw failure("incorrect '=' padding") }
        }
        var sawStandard = false
        var sawURL = false
        var values = [UInt8](repeating: 0, count: input.count)
        for (offset, character) in input.enumerated() {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+") where alphabet != .url, UInt8(ascii: "/") where alphabet != .url:
                value = character == UInt8(ascii: "+") ? 62 : 63
                sawStandard = true
            case UInt8(ascii: "-") where alphabet != .standard, UInt8(ascii: "_") where alphabet != .standard:
                value = character == UInt8(ascii: "-") ? 62 : 63
                sawURL = true
            default:
                throw failure("invalid character at offset \(offset)")
            }
            values[offset] = value
        }
        if sawStandard && sawURL { throw failure("mixed standard and URL-safe alphabets") }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 4 <= values.count {
            let v =
                UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6
                | UInt32(values[index + 3])
            out += [UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
            index += 4
        }
        if remainder == 2 {
            if values[index + 1] & 0x0F != 0 { throw failure("non-zero trailing bits") }
            out.append(values[index] << 2 | values[index + 1] >> 4)
        } else if remainder == 3 {
            if values[index + 2] & 0x03 != 0 { throw failure("non-zero trailing bits") }
            let v = UInt32(values[index]) << 18 | UInt32(values[index + 1]) << 12 | UInt32(values[index + 2]) << 6
            out += [UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF)]
        }
        return out
    }
}
