/// A canned response for ``FakeHTTPServer/route(_:method:_:)``.
public struct FakeHTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Response headers (names are sent lowercased over HTTP/2). The server sets `content-length` itself,
    /// unless `transfer-encoding: chunked` is given: then the body is sent without a length (chunked over
    /// HTTP/1.1, plain DATA frames over HTTP/2), as a streaming server would.
    public var headers: [String: String]
    /// The response body. Every `{{path}}` in it is replaced by the request's path (with its query), as
    /// an error page that echoes the request would.
    public var body: [UInt8]
    /// How long the server waits before answering; `nil` answers at once. Other requests are not held up.
    public var delay: Duration?

    /// Creates a canned response.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Response headers.
    ///   - body: The response body.
    ///   - delay: How long to wait before answering.
    public init(status: Int = 200, headers: [String: String] = [:], body: [UInt8] = [], delay: Duration? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
    }

    /// A JSON response with `content-type: application/json`.
    /// - Parameters:
    ///   - status: The status code.
    ///   - text: The JSON text of the body.
    ///   - headers: Further headers; a `content-type` here wins.
    /// - Returns: The response.
    public static func json(_ status: Int, _ text: String, headers: [String: String] = [:]) -> FakeHTTPResponse {
        var all = ["content-type": "application/json"]
        all.merge(headers) { _, given in given }
        return FakeHTTPResponse(status: status, headers: all, body: Array(text.utf8))
    }
}
