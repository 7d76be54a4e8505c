import Foundation
import HeraldMHD
import Router

/// `herald serve`'s HTTP side: the ``HeraldAPI`` on a ``MicroHTTPServer`` listening where the
/// `server:` section says.
public final class HeraldServer: Sendable {
    /// The API (also callable without a socket).
    public let api: HeraldAPI
    let http: MicroHTTPServer
    let forwarder: Task<Void, Never>
    let executor: HandlerExecutor

    /// The port it listens on.
    public var port: Int { http.port }
    /// Whether it serves HTTPS.
    public var isTLS: Bool { http.isTLS }
    /// How many connections are open now (reserve connections included).
    public var openConnections: Int { http.openConnections }

    /// Starts serving `router` with `server`. Throws ``ServerError`` when it cannot listen or read
    /// the TLS files.
    public init(router: Router, server: ServerConfig) throws {
        // Handlers and stream writers run on threads of their own (at least 4: a handler may wait on
        // the store), not on the global pool, which the worker and an embedding app share.
        do { _ = try RelayHub(server: server) } catch { throw ServerError(error.description) }
        let executor = HandlerExecutor(threads: max(4, ProcessInfo.processInfo.activeProcessorCount))
        let api = HeraldAPI(router: router, server: server, executor: executor)
        var options = ServerOptions()
        options.executor = executor
        options.maxBody = server.maxBody
        options.requestDeadline = server.requestTimeout
        options.headerDeadline = server.headerTimeout
        options.maxConnections = server.maxConnections
        options.maxConnectionsPerClient = server.maxConnectionsPerClient
        options.idleTimeoutSeconds = max(1, Int(server.idleTimeout.components.seconds))
        if let tls = server.tls {
            do {
                options.tls = (
                    try String(contentsOfFile: tls.certificate, encoding: .utf8),
                    try String(contentsOfFile: tls.key, encoding: .utf8)
                )
            } catch {
                throw ServerError("cannot read server.tls files: \(error.localizedDescription)")
            }
        }
        options.rejection = { reason in
            switch reason {
            case .bodyTooLarge(let limit):
                APIError(413, "payload_too_large", "the body is over max-body (\(limit) bytes)").response
            case .shuttingDown: APIError.unavailable("shutting down").response
            case .badFraming(let why): APIError(400, "bad_request", why).response
            case .unsupportedTransferEncoding: APIError(501, "not_implemented", reason.message).response
            case .headTooLarge: APIError(431, "header_too_large", reason.message).response
            case .uriTooLong: APIError(414, "uri_too_long", reason.message).response
            case .tooManyConnections(let limit):
                APIError(
                    503, "too_many_connections",
                    "the server has max-connections (\(limit)) open; only GET /healthz is served on this one",
                    headers: [("Retry-After", "1")]
                ).response
            case .tooManyConnectionsFromClient(let limit):
                APIError(
                    503, "too_many_connections",
                    "this client address has max-connections-per-client (\(limit)) open; "
                        + "only GET /healthz is served on this one",
                    headers: [("Retry-After", "1")]
                ).response
            }
        }
        self.api = api
        self.executor = executor
        do {
            http = try MicroHTTPServer(host: server.host, port: server.port, options: options) { request in
                await api.handle(request)
            }
        } catch {
            executor.shutdown()
            throw error
        }
        forwarder = api.forwardRouterEvents()
    }

    /// Swaps tokens and limits (SIGHUP); connections and event streams stay open. The connection
    /// limits and timeouts stay as they were at start.
    public func reload(server: ServerConfig) { api.reload(server: server) }

    /// Stops accepting, lets requests in flight finish (up to `grace`), ends event streams, stops.
    public func stop(grace: Duration = .seconds(10)) async {
        // Streams end and new requests get 503 at once; requests in flight go on.
        api.beginShutdown()
        await http.stop(grace: grace)
        api.metrics.relays.history.flush(store: api.router.store, logger: api.router.logger)
        forwarder.cancel()
        executor.shutdown()
    }
}
