import ChannelAPI

/// One route an inbound relay protocol serves: a method, a path template and who checks access.
public struct RelayRoute: Sendable, Hashable {
    /// Who lets a request in.
    public enum Access: Sendable, Hashable {
        /// The hub: a bearer token with scope `relay`, an allowed client address, or `auth: none`
        /// on loopback (`server.relays.NAME.access`).
        case relay
        /// The protocol itself (a per-site HMAC, a per-device credential): the hub lets every
        /// request through to ``InboundRelay/handle(_:delivery:)`` and rate-limits it per client
        /// address.
        case own
    }

    /// The method (`POST`).
    public var method: String
    /// The path template: literal segments and `{name}` segments, each matching one non-empty
    /// segment (`/v1/push`, `/v1/devices/{deviceId}/push`).
    public var path: String
    /// Who lets a request in.
    public var access: Access

    /// Creates a route.
    public init(_ method: String, _ path: String, access: Access = .relay) {
        self.method = method
        self.path = path
        self.access = access
    }
}

/// A request to a relay route, parsed and let in by ``RelayHub`` (access checked, rate limited).
public struct RelayRequest: Sendable {
    /// The route it matched.
    public var route: RelayRoute
    /// The path as requested (what a signature covers), without the query.
    public var path: String
    /// The values of the route's `{…}` segments, by name.
    public var parameters: [String: String]
    /// The query parameters.
    public var query: [String: String]
    /// Request headers, names in lower case.
    public var headers: [String: String]
    /// The body.
    public var body: [UInt8]
    /// The client's numeric address ("" when unknown).
    public var clientAddress: String
    /// The name of the bearer token that let it in; nil when the address allow-list or `auth: none` did.
    public var tokenName: String?
    /// The scopes of that token (empty without one).
    public var scopes: Set<String>

    /// Creates a request.
    public init(
        route: RelayRoute, path: String? = nil, parameters: [String: String] = [:], query: [String: String] = [:],
        headers: [String: String] = [:], body: [UInt8], clientAddress: String = "", tokenName: String? = nil,
        scopes: Set<String> = []
    ) {
        self.route = route
        self.path = path ?? route.path
        self.parameters = parameters
        self.query = query
        self.headers = headers
        self.body = body
        self.clientAddress = clientAddress
        self.tokenName = tokenName
        self.scopes = scopes
    }

    /// A header by name (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }

    /// The value of the `{name}` segment (empty when the route has none).
    public subscript(_ name: String) -> String { parameters[name] ?? "" }
}

/// What a relay route answers: a status, extra headers and a JSON body (`Content-Type:
/// application/json` is added by the hub).
public struct RelayResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// Extra headers (`Retry-After`).
    public var headers: [String: String]
    /// The JSON body.
    public var body: JSONValue

    /// Creates a response.
    public init(_ status: Int, _ body: JSONValue, headers: [String: String] = [:]) {
        self.status = status
        self.body = body
        self.headers = headers
    }
}

/// An inbound relay protocol: to `herald serve` what a channel module is to the router. It names its
/// routes and answers each request, delivering through ``RelayDelivery`` (Herald's own `apns`/`fcm`
/// channels, the store's state). Access, rate limits and metrics are the hub's; bodies, validation,
/// signatures and answers are the protocol's. See docs/relay-server.md, "Adding a protocol".
public protocol InboundRelay: Sendable {
    /// The routes it serves.
    var routes: [RelayRoute] { get }
    /// Answers one request; never throws (every failure is a 4xx/5xx answer in the protocol's shape).
    func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse
}

/// The settings a relay module is made from: the common keys the hub reads and the section itself
/// for the protocol's own keys.
public struct RelayModuleConfig: Sendable {
    /// The protocol name (the key under `server.relays`).
    public var name: String
    /// The channel it delivers through (`channel:`).
    public var channel: String
    /// The whole section, for the protocol's own keys.
    public var node: ConfigNode
    /// The keys the protocol reads besides the common ones; any other key is a config error.
    public var ownKeys: [(key: String, value: ConfigNode)]
}

/// A relay protocol module: its name under `server.relays`, the keys it reads beside the common ones,
/// and how to make it.
public struct InboundRelayModule: Sendable {
    /// The key under `server.relays` (`hapi`).
    public let name: String
    /// The protocol's own config keys.
    public let keys: Set<String>
    /// Makes the protocol from its settings; throws a config error naming the bad key.
    public let make: @Sendable (RelayModuleConfig) throws(ConfigError) -> any InboundRelay

    /// Creates a module.
    public init(
        name: String, keys: Set<String> = [],
        make: @escaping @Sendable (RelayModuleConfig) throws(ConfigError) -> any InboundRelay
    ) {
        self.name = name
        self.keys = keys
        self.make = make
    }

    /// The modules `herald serve` knows.
    public static let builtIn: [InboundRelayModule] = [
        HapiRelayServer.module, OpenChamberRelayServer.module, HomeAssistantForwarder.module, PulseRelayServer.module,
    ]
}
