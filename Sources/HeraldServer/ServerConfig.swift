import ChannelAPI
import Foundation

/// The `server:` section: what `herald serve` listens on and whom it lets in (http-api.md §1). The
/// router keeps the section as a node (``HeraldConfig/serverNode``); ``init(_:)`` reads it.
public struct ServerConfig: Sendable {
    /// The numeric address to listen on (`127.0.0.1`, `::1`, `0.0.0.0`).
    public var host = "127.0.0.1"
    /// The port (0: any free port, printed at start).
    public var port = 8686
    /// Where `listen` was written (for the error that refuses a public listen without tokens).
    public var listenMark: ConfigMark?
    /// PEM certificate and key files, when Herald terminates TLS itself.
    public var tls: TLSFiles?
    /// The largest request body, in bytes.
    public var maxBody = 64 * 1024
    /// The largest `max-body` a config may set (1 MiB): a notification's fields are capped well
    /// below it, so a larger body is never a valid request, only memory held per connection.
    public static let maxBodyCeiling = 1 << 20
    /// The accepted tokens (only their hashes).
    public var tokens: [APIToken] = []
    /// Requests per second each token may make, on average.
    public var ratePerSecond = 50.0
    /// Requests a token may make at once before the rate applies.
    public var burst = 200
    /// Whether `GET /metrics` needs no token (`metrics: public`, the default) or the `metrics` scope.
    public var metricsPublic = true
    /// How long a client has to send one whole request (headers and body).
    public var requestTimeout: Duration = .seconds(30)
    /// How long a client has to send a request's head (request line and headers): from the
    /// connection's start, or on a kept-alive connection from the previous answer plus `idleTimeout`.
    public var headerTimeout: Duration = .seconds(10)
    /// How long an idle connection is kept.
    public var idleTimeout: Duration = .seconds(15)
    /// Connections served at once (16 more are kept for `GET /healthz`); read at start.
    public var maxConnections = 1000
    /// Connections one client address may hold at once; read at start.
    public var maxConnectionsPerClient = 64
    /// Event streams (`GET /v1/events`) one token may hold open at once.
    public var maxStreamsPerToken = 32
    /// Long polls (`GET /v1/notifications/{id}/action`) one token may have waiting at once.
    public var maxLongPollsPerToken = 32
    /// How often an event stream sends a `: keepalive` comment.
    public var keepalive: Duration = .seconds(15)
    /// The `relays:` section as written (read by `herald serve`'s relay modules, docs/relay-server.md); nil: none.
    public var relays: ConfigNode?

    /// The defaults: loopback port 8686, no TLS, 64 KiB bodies, no tokens.
    public init() {}

    /// Whether the listen address only accepts connections from this host.
    public var isLoopback: Bool { ServerConfig.isLoopback(host) }

    /// Whether a numeric address is a loopback address (127.0.0.0/8, ::1).
    public static func isLoopback(_ host: String) -> Bool {
        if host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        if host.hasPrefix("::ffff:") { return isLoopback(String(host.dropFirst(7))) }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Reads `host:port` or `[v6]:port`; `localhost` means 127.0.0.1. Nil when it is neither.
    public static func parseListen(_ text: String) -> (host: String, port: Int)? {
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard host.contains(":") else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host == "localhost" { host = "127.0.0.1" }
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && UInt8($0) != nil }) else {
                return nil
            }
        }
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText),
            (0...65535).contains(port)
        else { return nil }
        return (String(host), port)
    }

    /// Reads a size: bytes (`65536`) or with a unit (`512B`, `64KiB`, `1MiB`). Nil when unreadable.
    public static func parseSize(_ text: String) -> Int? { ConfigNode.parseSize(text) }
}
