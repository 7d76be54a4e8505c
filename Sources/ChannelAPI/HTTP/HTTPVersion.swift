/// The HTTP protocol version a response was received over.
public enum HTTPVersion: Sendable {
    /// HTTP/1.1 (or HTTP/1.0).
    // swift-format-ignore: AlwaysUseLowerCamelCase
    case http1_1
    /// HTTP/2, negotiated with ALPN over TLS.
    case http2
    /// Any other version (for example HTTP/3) or an unknown one.
    case other
}
