/// How a ``MicroHTTPServer`` listens and protects itself.
public struct ServerOptions: Sendable {
    /// The largest request body accepted; larger ones get ``ServerRejection/bodyTooLarge(limit:)``
    /// before they are read whole (a `Content-Length` over it at once, a chunked body as soon as it
    /// passes it).
    public var maxBody: Int = 64 * 1024
    /// How long a connection may take to deliver one whole request (headers and body), counted from
    /// the connection's start or the end of its previous response; past it the connection is cut.
    /// This catches a client that sends one byte a second, which an inactivity timeout never does.
    public var requestDeadline: Duration = .seconds(30)
    /// A connection idle this long (no byte either way) is closed.
    public var idleTimeoutSeconds: Int = 15
    /// Worker threads (each with its own epoll loop); default: the number of cores.
    public var threads: Int = 0
    /// At most this many connections at once (0: libmicrohttpd's default).
    public var connectionLimit: Int = 0
    /// PEM certificate chain and private key: serve HTTPS through libmicrohttpd's GnuTLS.
    public var tls: (certificatePEM: String, keyPEM: String)?
    /// How often the request-deadline timer looks at connections.
    public var deadlineCheckInterval: Duration = .milliseconds(100)
    /// Where handlers run; nil: the global concurrent executor.
    public var executor: HandlerExecutor?
    /// The answer for a request the server refuses itself (413, 503).
    public var rejection: @Sendable (ServerRejection) -> ServerResponse = { reason in
        switch reason {
        case .bodyTooLarge(let limit):
            ServerResponse(status: 413, body: .bytes(Array("request body over \(limit) bytes\n".utf8)))
        case .shuttingDown: ServerResponse(status: 503, body: .bytes(Array("shutting down\n".utf8)))
        }
    }

    /// Defaults: 64 KiB bodies, 30 s per request, 15 s idle, one thread per core, plain HTTP.
    public init() {}
}

/// Why the server could not start, or a listen address could not be read.
public struct ServerError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
