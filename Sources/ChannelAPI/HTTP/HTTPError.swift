/// Why ``HTTPTransport/send(_:)`` did not produce a response.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable {
        /// The request's total timeout (or the connect timeout) elapsed.
        case timeout
        /// The host could not be resolved or the TCP connection was refused or failed.
        case connectFailed
        /// The TLS handshake failed, including an untrusted or mismatched server certificate.
        case tls
        /// The calling task was cancelled; the transfer was aborted.
        case cancelled
        /// The response body exceeded the allowed size; the transfer was aborted.
        case responseTooLarge
        /// The client was shut down before or while the request ran.
        case shutdown
        /// The request itself is malformed (method, URL or header), or the configuration is invalid.
        case invalidRequest
        /// Any other transport failure (connection reset, protocol error, ...).
        case transport
        /// The request's ``AddressPolicy`` refused the address the host resolved to (or the address of
        /// the connection it would have reused); nothing was sent. Permanent for this URL.
        case blockedAddress = "blocked-address"
    }

    /// The kind of failure.
    public let code: Code
    /// A human-readable explanation; carries libcurl's error buffer text when there is one.
    public let message: String
    /// The underlying libcurl result code, when the failure came from libcurl.
    public let curlCode: Int?

    /// Creates an error.
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A human-readable explanation.
    ///   - curlCode: The libcurl result code, if any.
    public init(_ code: Code, _ message: String, curlCode: Int? = nil) {
        self.code = code
        self.message = message
        self.curlCode = curlCode
    }

    /// Whether trying again later may succeed: `timeout`, `connectFailed` and `transport` are transient.
    public var isTransient: Bool {
        switch code {
        case .timeout, .connectFailed, .transport: true
        case .tls, .cancelled, .responseTooLarge, .shutdown, .invalidRequest, .blockedAddress: false
        }
    }

    /// `code: message`, plus the libcurl code when there is one.
    public var description: String {
        if let curlCode { return "\(code.rawValue): \(message) (curl \(curlCode))" }
        return "\(code.rawValue): \(message)"
    }
}
