/// Settings an event loop applies to every transfer, resolved once from ``HTTPClientConfiguration``.
struct LoopSettings: Sendable {
    var caFile: String?
    var defaultTimeoutMs: Int
    var connectTimeoutMs: Int
    var maxResponseBytes: Int
    var maxConnectionsPerHost: Int
    var maxConcurrentStreams: Int
    var userAgent: String
    /// Most connection sockets a loop corks (``CorkedSockets``); 0 turns corking off.
    var corkLimit: Int
}
