/// The certificate and key files Herald terminates TLS with (`server.tls`).
public struct TLSFiles: Sendable, Equatable {
    /// The PEM certificate (chain) file.
    public var certificate: String
    /// The PEM private key file.
    public var key: String

    /// Creates the pair.
    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}
