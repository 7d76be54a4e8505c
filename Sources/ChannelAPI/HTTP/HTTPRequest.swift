/// A request for ``HTTPTransport/send(_:)``.
public struct HTTPRequest: Sendable {
    /// The method, for example `POST` or `GET`. Must be an HTTP token (letters, digits, `!#$%&'*+-.^_|~`).
    public var method: String
    /// The absolute URL, for example `https://api.push.apple.com/3/device/abc`.
    public var url: String
    /// Request headers, sent in order. Names and values must not contain CR, LF or NUL.
    public var headers: [HTTPHeader]
    /// The request body; empty for none.
    public var body: [UInt8]
    /// Total time allowed for this request, connecting included; `nil` uses the client's default.
    public var timeout: Duration?
    /// Largest response body accepted for this request; `nil` uses the client's default.
    public var maxResponseBytes: Int?
    /// Which addresses the connection may reach, checked on the resolved address when connecting;
    /// ``AddressPolicy/any`` unless given. Device-supplied URLs use ``AddressPolicy/publicOnly``.
    public var addressPolicy: AddressPolicy

    /// Creates a request.
    /// - Parameters:
    ///   - method: The HTTP method; `POST` unless given.
    ///   - url: The absolute URL.
    ///   - headers: Request headers.
    ///   - body: The request body.
    ///   - timeout: Total time allowed; `nil` for the client's default.
    ///   - maxResponseBytes: Largest response body accepted; `nil` for the client's default.
    ///   - addressPolicy: Which peer addresses the connection may reach.
    public init(
        method: String = "POST", url: String, headers: [HTTPHeader] = [], body: [UInt8] = [],
        timeout: Duration? = nil, maxResponseBytes: Int? = nil, addressPolicy: AddressPolicy = .any
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
        self.addressPolicy = addressPolicy
    }
}
