/// An error raised by HeraldCrypto.
///
/// Every failure of an OpenSSL call is turned into a `CryptoError` that names the C call (`call`) and carries the
/// text of the OpenSSL error queue (`message`), which is drained when the error is built.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// The category of a ``CryptoError``.
    public enum Code: String, Sendable {
        /// A key is malformed, of the wrong type or curve, or not on the curve.
        case invalidKey
        /// An input (length, nonce, signature, token) is malformed.
        case invalidInput
        /// Text is not valid Base64 / base64url in the strict sense required by the API.
        case invalidBase64
        /// A PEM document could not be parsed.
        case invalidPEM
        /// An AEAD tag, MAC or signature did not verify.
        case authenticationFailed
        /// An OpenSSL call failed for another reason (allocation failure, provider error).
        case openssl
    }

    /// The category of the failure.
    public let code: Code
    /// The C call that failed, or `""` when the failure was detected in Swift.
    public let call: String
    /// A human-readable explanation, including the `ERR_error_string_n` text of the OpenSSL error queue.
    public let message: String

    /// Creates an error value.
    /// - Parameters:
    ///   - code: The category.
    ///   - call: The C call that failed, or `""`.
    ///   - message: A human-readable explanation.
    public init(code: Code, call: String = "", message: String) {
        self.code = code
        self.call = call
        self.message = message
    }

    /// `code: call: message`, omitting `call` when it is empty.
    public var description: String {
        call.isEmpty ? "CryptoError.\(code.rawValue): \(message)" : "CryptoError.\(code.rawValue): \(call): \(message)"
    }
}
