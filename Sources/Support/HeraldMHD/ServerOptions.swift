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
    /// The whole request head (request line and headers) must arrive within this time of the
    /// connection's start; on a kept-alive connection, within ``idleTimeoutSeconds`` plus this time
    /// of the previous answer. Past it the connection is cut (slow-header clients, slowloris).
    public var headerDeadline: Duration = .seconds(10)
    /// Connections served at once; past it a new connection is a reserve connection (see
    /// ``reserveConnections``).
    public var maxConnections: Int = 1000
    /// Connections libmicrohttpd accepts beyond ``maxConnections``, kept for health checks: on
    /// them only requests to ``reservePaths`` are handled, everything else gets
    /// ``ServerRejection/tooManyConnections`` and the connection is closed; their head must arrive
    /// within ``reserveHeaderDeadline``. Past `maxConnections + reserveConnections` libmicrohttpd
    /// stops accepting (new connections wait in the listen backlog).
    public var reserveConnections: Int = 16
    /// Connections one client address may hold at once. Its next ``reservePerClient`` connections
    /// are served like reserve connections (a health check gets through, anything else gets
    /// ``ServerRejection/tooManyConnectionsFromClient(limit:)``); connections past those are closed
    /// at once, unanswered (their head has not arrived, so nothing can be answered yet).
    public var maxConnectionsPerClient: Int = 64
    /// See ``maxConnectionsPerClient``.
    public var reservePerClient: Int = 2
    /// Paths (`GET` or `HEAD`) a reserve connection may ask for.
    public var reservePaths: Set<String> = ["/healthz"]
    /// The head deadline of a reserve connection (at most ``headerDeadline``); while
    /// ``maxConnections`` are open, of every connection waiting for a head (kept-alive idle ones too).
    public var reserveHeaderDeadline: Duration = .seconds(2)
    /// The largest request head (request line and headers) handled; larger ones get
    /// ``ServerRejection/headTooLarge(limit:)``. libmicrohttpd gets a per-connection memory pool
    /// of twice this (at least 32 KiB), and answers heads larger than that pool itself (HTML).
    public var maxHeadBytes: Int = 32 * 1024
    /// The longest request target (path and query) handled; longer ones get
    /// ``ServerRejection/uriTooLong(limit:)``.
    public var maxURIBytes: Int = 8 * 1024
    /// PEM certificate chain and private key: serve HTTPS through libmicrohttpd's GnuTLS.
    public var tls: (certificatePEM: String, keyPEM: String)?
    /// How often the request-deadline timer looks at connections.
    public var deadlineCheckInterval: Duration = .milliseconds(100)
    /// Where handlers run; nil: the global concurrent executor.
    public var executor: HandlerExecutor?
    /// The answer for a request the server refuses itself (400, 413, 414, 431, 501, 503); the
    /// server adds `Connection: close` where ``ServerRejection/closesConnection`` says so.
    public var rejection: @Sendable (ServerRejection) -> ServerResponse = { reason in
        switch reason {
        case .bodyTooLarge(let limit):
            ServerResponse(status: 413, body: .bytes(Array("request body over \(limit) bytes\n".utf8)))
        case .shuttingDown: ServerResponse(status: 503, body: .bytes(Array("shutting down\n".utf8)))
        default: ServerResponse(status: reason.status, body: .bytes(Array("\(reason.message)\n".utf8)))
        }
    }

    /// Defaults: 64 KiB bodies, 30 s per request, 10 s per head, 15 s idle, 1000 connections (64 per
    /// client) and 16 in reserve, one thread per core, plain HTTP.
    public init() {}
}

/// Why the server could not start, or a listen address could not be read.
public struct ServerError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong.
    public let description: String
    /// Creates an error.
    public init(_ description: String) { self.description = description }
}
