import ChannelAPI
import Foundation
import HeraldHTTP

/// What an embedder can inject into a ``Router``.
public struct RouterOptions: Sendable {
    /// The clock (tests inject a manual one).
    public var clock: any HeraldClock
    /// Randomness for jitter, nonces and keys.
    public var random: any RandomSource
    /// Where log lines go; `nil` writes JSON lines to stderr at the config's `log.level`.
    public var logSink: (any LogSink)?
    /// A store to use instead of opening `store.path` from the config.
    public var store: (any HeraldStore)?
    /// HTTP client settings. The config's `http.event-loops` and `http.connections-per-host` override
    /// theirs when set, and its `tls.ca-file` is used when `caFile` is nil.
    public var http: HTTPClientConfiguration
    /// Environment for `${VAR}` expansion.
    public var environment: [String: String]
    /// The HTTP transport every channel sends through instead of the router's own client: a
    /// `ScriptedTransport` (RouterTesting) runs a YAML route in-process, with the providers' answers
    /// scripted. nil (the default) is the router's libcurl HTTP/2 client, built from ``http``.
    public var transport: (any HTTPTransport)?
    /// How long a claim on an outbox row lasts without renewal. A process renews its claims every
    /// third of this while it works on them, so a live holder never loses them; the claims of a
    /// process that died expire after at most this long (at once, when the next `drain` on the same
    /// host and PID namespace sees its pid is gone). Default 60 s; at least 30 ms is used.
    public var leaseDuration: Duration = .seconds(60)
    /// Wall time a worker pass starts new due work for (tests shorten it); see `Executor.passBudget`.
    var passBudget: Duration = .seconds(10)

    /// Defaults: the system clock and randomness, stderr logging, the config's SQLite store.
    public init(
        clock: any HeraldClock = SystemClock(), random: any RandomSource = SystemRandom(),
        logSink: (any LogSink)? = nil, store: (any HeraldStore)? = nil,
        http: HTTPClientConfiguration = HTTPClientConfiguration(),
        environment: [String: String] = ProcessInfo.processInfo.environment, transport: (any HTTPTransport)? = nil
    ) {
        self.clock = clock
        self.random = random
        self.logSink = logSink
        self.store = store
        self.http = http
        self.environment = environment
        self.transport = transport
    }
}
