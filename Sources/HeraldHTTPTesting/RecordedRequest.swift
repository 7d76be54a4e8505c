/// A request as received by ``FakeHTTPServer``.
public struct RecordedRequest: Sendable {
    /// The method, for example `POST`.
    public var method: String
    /// The request target (path and query), for example `/3/device/abc`.
    public var path: String
    /// Headers with lowercased names; repeated headers are joined with `, `. Over HTTP/2 `:authority`
    /// appears as `host`; other pseudo-headers are left out.
    public var headers: [String: String]
    /// The request body.
    public var body: [UInt8]
    /// Which accepted TCP connection carried the request, counting from 1.
    public var connectionID: Int
    /// `"2"` or `"1.1"`.
    public var httpVersion: String

    /// Creates a recorded request.
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The request target.
    ///   - headers: Headers with lowercased names.
    ///   - body: The body.
    ///   - connectionID: The connection number.
    ///   - httpVersion: `"2"` or `"1.1"`.
    public init(
        method: String, path: String, headers: [String: String], body: [UInt8], connectionID: Int,
        httpVersion: String
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.connectionID = connectionID
        self.httpVersion = httpVersion
    }

    /// The value of a header, looked up case-insensitively.
    /// - Parameter name: The header name.
    /// - Returns: The value, or `nil` when absent.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The body decoded as UTF-8 (invalid sequences are replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
