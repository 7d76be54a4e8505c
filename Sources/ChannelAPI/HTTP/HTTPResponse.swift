/// A response received by ``HTTPTransport/send(_:)``.
///
/// Any status is a response, not an error: a `404` or `500` is returned, never thrown.
public struct HTTPResponse: Sendable {
    /// The status code of the final response, for example `200`.
    public var status: Int
    /// Headers of the final response (informational `1xx` responses are dropped), in received order.
    public var headers: [HTTPHeader]
    /// The response body.
    public var body: [UInt8]
    /// The protocol version the response came over.
    public var version: HTTPVersion

    /// Creates a response; the client builds these, tests may too.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: The response headers.
    ///   - body: The response body.
    ///   - version: The protocol version.
    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], version: HTTPVersion = .http2) {
        self.status = status
        self.headers = headers
        self.body = body
        self.version = version
    }

    /// The value of the first header whose name matches `name`, compared case-insensitively.
    /// - Parameter name: The header name to look for.
    /// - Returns: The value, or `nil` when the header is absent.
    public func header(_ name: String) -> String? {
        for header in headers where HTTPHeader.namesEqual(header.name, name) { return header.value }
        return nil
    }

    /// The body decoded as UTF-8 (invalid sequences are replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
