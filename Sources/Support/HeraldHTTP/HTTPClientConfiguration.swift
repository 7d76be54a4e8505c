/// Settings for an ``HTTPClient``.
///
/// TLS peer and host verification is always on; there is deliberately no option to turn it off.
public struct HTTPClientConfiguration: Sendable {
    /// A PEM bundle of additional CAs to trust (`CURLOPT_CAINFO`); the system store
    /// (`/etc/ssl/certs`) stays trusted as well. `nil` trusts the system store only.
    public var caFile: String?
    /// Total time allowed for a request when ``HTTPRequest/timeout`` is `nil`.
    public var defaultTimeout: Duration = .seconds(30)
    /// Time allowed to establish a connection (TCP and TLS).
    public var connectTimeout: Duration = .seconds(10)
    /// Largest response body accepted when ``HTTPRequest/maxResponseBytes`` is `nil`.
    public var maxResponseBytes: Int = 1 << 20
    /// Most connections one event loop opens to one host (`CURLMOPT_MAX_HOST_CONNECTIONS`).
    public var maxConnectionsPerHost: Int = 4
    /// Most HTTP/2 streams per connection (`CURLMOPT_MAX_CONCURRENT_STREAMS`).
    public var maxConcurrentStreams: Int = 100
    /// Number of event-loop threads, each with its own libcurl multi handle and connection cache;
    /// requests are spread over them round-robin. Must be at least 1.
    public var eventLoops: Int = 1
    /// The `User-Agent` header sent with every request.
    public var userAgent: String = "herald/0.1"
    /// Whether each event loop corks its connections (`TCP_CORK`, Linux) while it runs a round of
    /// transfers and sends what they hold once at the end of the round, before it waits again.
    ///
    /// The requests one round writes then share TCP segments instead of taking one or two each, which
    /// saves CPU on both ends of a busy HTTP/2 connection; a request waits at most for the rest of its
    /// round. At most 16 connections per loop are corked (each costs one `setsockopt` per round); the
    /// rest are sent as written. On by default.
    public var coalescesWrites: Bool = true

    /// Creates a configuration; every parameter has a default.
    /// - Parameters:
    ///   - caFile: Extra CA bundle to trust.
    ///   - defaultTimeout: Total time per request when the request gives none.
    ///   - connectTimeout: Time to establish a connection.
    ///   - maxResponseBytes: Largest response body when the request gives no limit.
    ///   - maxConnectionsPerHost: Connections per host and event loop.
    ///   - maxConcurrentStreams: HTTP/2 streams per connection.
    ///   - eventLoops: Number of event-loop threads.
    ///   - userAgent: The `User-Agent` header.
    ///   - coalescesWrites: Whether loops cork their connections and flush them once per round.
    public init(
        caFile: String? = nil, defaultTimeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10),
        maxResponseBytes: Int = 1 << 20, maxConnectionsPerHost: Int = 4, maxConcurrentStreams: Int = 100,
        eventLoops: Int = 1, userAgent: String = "herald/0.1",
        coalescesWrites: Bool = true
    ) {
        self.caFile = caFile
        self.defaultTimeout = defaultTimeout
        self.connectTimeout = connectTimeout
        self.maxResponseBytes = maxResponseBytes
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxConcurrentStreams = maxConcurrentStreams
        self.eventLoops = eventLoops
        self.userAgent = userAgent
        self.coalescesWrites = coalescesWrites
    }
}
