/// One HTTP request as the server received it (headers complete, body read whole).
public struct ServerRequest: Sendable, Equatable {
    /// The method (`GET`, `POST`, …), as sent.
    public var method: String
    /// The path without the query string, percent-decoded by the server.
    public var path: String
    /// Query parameters, percent-decoded; the first value of each name (a name without `=` maps to "").
    public var query: [String: String]
    /// Request headers, names in lower case; repeated headers joined with ", ".
    public var headers: [String: String]
    /// The request body.
    public var body: [UInt8]
    /// The client's numeric address as the server saw it ("" when unknown, as for a request made in-process).
    public var clientAddress = ""

    /// Creates a request.
    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// A header by name (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// What a handler answers: a status, headers and a body, or a stream fed from Swift.
public struct ServerResponse: Sendable {
    /// The body of a response.
    public enum Body: Sendable {
        /// A complete body.
        case bytes([UInt8])
        /// A body written piece by piece (Server-Sent Events); the response ends when the stream is finished.
        case stream(ResponseStream)
    }

    /// The HTTP status.
    public var status: Int
    /// Response headers in order.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Body

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The complete body's bytes (empty for a stream).
    public var bodyBytes: [UInt8] {
        if case .bytes(let b) = body { return b }
        return []
    }

    /// The first header with this name (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Why the server answered a request itself, without calling the handler.
public enum ServerRejection: Sendable, Equatable {
    /// The body is larger than ``ServerOptions/maxBody`` (413).
    case bodyTooLarge(limit: Int)
    /// The server is stopping (503).
    case shuttingDown
    /// The request's framing is ambiguous (RFC 9112 §6): `Content-Length` with `Transfer-Encoding`,
    /// or more than one `Content-Length` (400; the connection is closed).
    case badFraming(String)
    /// A `Transfer-Encoding` other than `chunked` (501; the connection is closed).
    case unsupportedTransferEncoding(String)
    /// The request head is larger than ``ServerOptions/maxHeadBytes`` (431; closed).
    case headTooLarge(limit: Int)
    /// The request target is longer than ``ServerOptions/maxURIBytes`` (414; closed).
    case uriTooLong(limit: Int)
    /// The request came on a reserve connection (more than ``ServerOptions/maxConnections`` are
    /// open) and is not a health check (503; closed).
    case tooManyConnections(limit: Int)
    /// The request came on a connection past the client's ``ServerOptions/maxConnectionsPerClient``
    /// and is not a health check (503; closed).
    case tooManyConnectionsFromClient(limit: Int)

    /// The HTTP status of the rejection.
    public var status: Int {
        switch self {
        case .bodyTooLarge: 413
        case .shuttingDown, .tooManyConnections, .tooManyConnectionsFromClient: 503
        case .badFraming: 400
        case .unsupportedTransferEncoding: 501
        case .headTooLarge: 431
        case .uriTooLong: 414
        }
    }

    /// Whether the server closes the connection after the answer (every rejection but
    /// ``bodyTooLarge(limit:)`` and ``shuttingDown``, whose connections stay usable).
    public var closesConnection: Bool {
        switch self {
        case .bodyTooLarge, .shuttingDown: false
        default: true
        }
    }

    /// A sentence for people.
    public var message: String {
        switch self {
        case .bodyTooLarge(let limit): "the body is over \(limit) bytes"
        case .shuttingDown: "shutting down"
        case .badFraming(let why): why
        case .unsupportedTransferEncoding(let coding):
            "Transfer-Encoding \(coding) is not supported (only chunked)"
        case .headTooLarge(let limit): "the request head is over \(limit) bytes"
        case .uriTooLong(let limit): "the request target is over \(limit) bytes"
        case .tooManyConnections(let limit):
            "the server has \(limit) connections open; this one only serves health checks"
        case .tooManyConnectionsFromClient(let limit):
            "this client has \(limit) connections open; this one only serves health checks"
        }
    }
}
