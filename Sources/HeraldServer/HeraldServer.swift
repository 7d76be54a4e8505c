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

    /// The port it listens on.
    public var port: Int { http.port }
    /// Whether it serves HTTPS.
    public var isTLS: Bool { http.isTLS }

    /// Starts serving `router` with `server`. Throws ``ServerError`` when it cannot listen or read
    /// the TLS files.
    public init(router: Router, server: ServerConfig) throws {
        let api = HeraldAPI(router: router, server: server)
        var options = ServerOptions()
        options.maxBody = server.maxBody
        options.requestDeadline = server.requestTimeout
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
            }
        }
        self.api = api
        http = try MicroHTTPServer(host: server.host, port: server.port, options: options) { request in
            await api.handle(request)
        }
        forwarder = api.forwardRouterEvents()
    }

    /// Swaps tokens and limits (SIGHUP); connections and event streams stay open.
    public func reload(server: ServerConfig) { api.reload(server: server) }

    /// Stops accepting, lets requests in flight finish (up to `grace`), ends event streams, stops.
    public func stop(grace: Duration = .seconds(10)) async {
        await http.stop(grace: grace)
        api.beginShutdown()
        forwarder.cancel()
    }
}
