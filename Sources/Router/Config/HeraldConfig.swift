import ChannelAPI
import HeraldHTTP
import HeraldYAML

/// The typed, validated channel graph loaded from YAML (contract §6).
public struct HeraldConfig: Sendable {
    /// The file it came from (`<config>` for in-memory text).
    public var file: String
    /// Schema version; only 1 exists.
    public var version: Int
    /// SQLite database path (used when ``storeURL`` is nil).
    public var storePath: String
    /// PostgreSQL URL (`store.url`, or `HERALD_STORE_URL`, which wins); nil for the SQLite store.
    /// It may hold a password: never log it (``PostgresStore/redactedURL`` is safe to show).
    public var storeURL: String? = nil
    /// `store.lease`: how long a claim on an outbox row lasts; nil keeps ``RouterOptions/leaseDuration``.
    public var storeLease: Duration? = nil
    /// `store.cache`: the SQLite page cache in bytes; nil keeps ``SQLiteStore/defaultCacheBytes``.
    public var storeCache: Int? = nil
    /// `store.prepared-statements`: whether PostgreSQL connections prepare their statements (default
    /// `true`; turn off behind PgBouncer before 1.21 in transaction mode). Ignored by SQLite.
    public var storePreparedStatements: Bool = true
    /// Extra trusted CA bundle for outgoing TLS.
    public var caFile: String?
    /// HTTP client tuning from `http:`; unset fields keep ``RouterOptions/http``.
    public var http: HTTPSettings = HTTPSettings()
    /// How long notifications and their history are kept.
    public var retention: Duration
    /// The lowest level logged to stderr.
    public var logLevel: LogLevel
    /// Channels by name, in file order.
    public var channels: [ChannelSpec]
    /// The routes.
    public var routes: RouteTable
    /// Non-fatal findings.
    public var warnings: [ConfigWarning]
    /// The `server:` section as written (a mapping, or nil when absent): HeraldServer reads its keys
    /// (`ServerConfig`); the router only checks that it is a mapping.
    public var serverNode: ConfigNode? = nil

    /// The channel named `name`.
    public func channel(_ name: String) -> ChannelSpec? { channels.first { $0.name == name } }
}

/// One channel's shared settings; the type-specific keys were read by its factory.
public struct ChannelSpec: Sendable {
    /// Name under `channels:`.
    public var name: String
    /// `type:`.
    public var type: String
    /// Platforms served (empty for sinks).
    public var platforms: [String]
    /// `enabled:`; a disabled channel stays in the graph but delivers nothing.
    public var enabled: Bool
    /// Per-channel timeout for one delivery call.
    public var timeout: Duration
    /// Retry policy.
    public var retry: RetryPolicy
    /// Whether the channel gets the namespace's pending-tags badge.
    public var badgePendingTags: Bool
    /// Hosts allowed for device-supplied URLs.
    public var allowHosts: [String]
    /// Where the channel is defined.
    public var mark: ConfigMark
    /// The channel's whole node, for its factory.
    public var node: ConfigNode

    /// Whether this channel has no devices (log, webhook).
    public var isSink: Bool { platforms.isEmpty }
}

/// Routes per namespace, with `default` as the fallback.
public struct RouteTable: Sendable {
    /// `routes.default`.
    public var defaultRoute: [RouteStep]
    /// `routes.namespaces.<ns>`.
    public var namespaces: [String: [RouteStep]]

    /// The steps for `namespace` and the route's name (`default` or `namespaces.<ns>`).
    public func route(for namespace: String) -> (name: String, steps: [RouteStep]) {
        if let steps = namespaces[namespace] { return ("namespaces.\(namespace)", steps) }
        return ("default", defaultRoute)
    }
}

/// One step of a route.
public struct RouteStep: Sendable, Equatable {
    /// How the channels of a step combine.
    public enum Mode: String, Sendable {
        /// Deliver through every channel (concurrently).
        case all
        /// Try channels in order; stop at the first that delivers to at least one device.
        case first
    }

    /// What `unless-delivered` names.
    public enum UnlessDelivered: Sendable, Equatable {
        /// Any channel of an earlier step.
        case any
        /// One of these channels.
        case channels([String])
    }

    /// `deliver:` channel names, in order.
    public var deliver: [String]
    /// `mode:`.
    public var mode: Mode
    /// `when: { type: [...] }`; nil = any.
    public var whenTypes: [String]?
    /// `when: { severity: [...] }`; nil = any.
    public var whenSeverities: [Severity]?
    /// `unless-delivered:`.
    public var unlessDelivered: UnlessDelivered?
    /// `unless-registered:`.
    public var unlessRegistered: [String]
    /// `timeout:` for the whole step.
    public var timeout: Duration?
    /// `cooldown:`: drop a repeat of the same tag within this window.
    public var cooldown: Duration?
    /// Where the step is defined.
    public var mark: ConfigMark

    /// Creates a step.
    public init(
        deliver: [String], mode: Mode = .all, whenTypes: [String]? = nil, whenSeverities: [Severity]? = nil,
        unlessDelivered: UnlessDelivered? = nil, unlessRegistered: [String] = [], timeout: Duration? = nil,
        cooldown: Duration? = nil, mark: ConfigMark = ConfigMark(line: 0, column: 0)
    ) {
        self.deliver = deliver
        self.mode = mode
        self.whenTypes = whenTypes
        self.whenSeverities = whenSeverities
        self.unlessDelivered = unlessDelivered
        self.unlessRegistered = unlessRegistered
        self.timeout = timeout
        self.cooldown = cooldown
        self.mark = mark
    }
}

/// The `http:` section: HTTP client tuning an operator may set. Read when a router starts; a reload
/// keeps the running client.
public struct HTTPSettings: Sendable, Equatable {
    /// `http.event-loops`: event-loop threads (1–16).
    public var eventLoops: Int?
    /// `http.connections-per-host`: connections per host and event loop (1–64).
    public var connectionsPerHost: Int?

    /// Creates settings; `nil` keeps the embedder's value.
    /// - Parameters:
    ///   - eventLoops: Event-loop threads.
    ///   - connectionsPerHost: Connections per host and event loop.
    public init(eventLoops: Int? = nil, connectionsPerHost: Int? = nil) {
        self.eventLoops = eventLoops
        self.connectionsPerHost = connectionsPerHost
    }

    /// `base` with these settings applied.
    /// - Parameter base: The embedder's configuration.
    /// - Returns: The configuration the router's client uses.
    public func applied(to base: HTTPClientConfiguration) -> HTTPClientConfiguration {
        var out = base
        if let eventLoops { out.eventLoops = eventLoops }
        if let connectionsPerHost { out.maxConnectionsPerHost = connectionsPerHost }
        return out
    }
}
