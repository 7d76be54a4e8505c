/// An error raised by HeraldSodium.
///
/// Every failure names the libsodium call involved (`call`) and explains it in `message`; no key or
/// plaintext material is ever part of the error.
public struct SodiumError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The category of a ``SodiumError``.
    public enum Code: String, Sendable {
        /// `sodium_init()` failed, so libsodium cannot be used in this process.
        case initializationFailed
        /// A key does not have ``SecretBox/keyLength`` bytes.
        case invalidKey
        /// A nonce does not have ``SecretBox/nonceLength`` bytes.
        case invalidNonce
        /// An input is malformed (for example a box shorter than its MAC).
        case invalidInput
        /// The Poly1305 MAC did not verify: wrong key, wrong nonce, or tampered data.
        case authenticationFailed
        /// A libsodium call failed for another reason.
        case sodium
    }

    /// The category of the failure.
    public let code: Code
    /// The libsodium call the failure belongs to (for example `crypto_secretbox_open_easy`).
    public let call: String
    /// A human-readable explanation.
    public let message: String

    /// `SodiumError.<code>: <call>: <message>`.
    public var description: String { "SodiumError.\(code.rawValue): \(call): \(message)" }
}
