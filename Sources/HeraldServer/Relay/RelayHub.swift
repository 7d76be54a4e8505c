import ChannelAPI
import Foundation
import HeraldMHD
import Router

/// The relay endpoints of `herald serve` (docs/relays.md): matches a request to a relay route, lets
/// it in (bearer token with scope `relay`, an allowed client address, or `auth: none` on loopback),
/// applies the relay's rate limit, and hands it to the protocol with a ``RelayDelivery``. Knows no
/// protocol: each is an ``InboundRelay`` made from its ``InboundRelayModule``.
public struct RelayHub: Sendable {
    /// One configured relay.
    struct Entry: Sendable {
        var settings: RelaySettings
        var relay: any InboundRelay
        var limiter: RateLimiter
    }

    let entries: [Entry]
    let byRoute: [RelayRoute: Int]
    let paths: [String: [String]]

    /// No relays.
    public static let empty = RelayHub(entries: [])

    init(entries: [Entry]) {
        self.entries = entries
        var byRoute: [RelayRoute: Int] = [:]
        var paths: [String: [String]] = [:]
        for (i, e) in entries.enumerated() {
            for r in e.relay.routes {
                byRoute[r] = i
                paths[r.path, default: []].append(r.method)
            }
        }
        self.byRoute = byRoute
        self.paths = paths
    }

    /// The relays of `server.relays`; throws a config error for a bad section or two relays on one route.
    public init(server: ServerConfig, modules: [InboundRelayModule] = InboundRelayModule.builtIn) throws(ConfigError) {
        var entries: [Entry] = []
        var seen: Set<RelayRoute> = []
        for s in try RelaysConfig.read(server.relays, loopback: server.isLoopback, modules: modules) {
            guard let module = modules.first(where: { $0.name == s.module.name }) else { continue }
            let relay = try module.make(s.module)
            for r in relay.routes where !seen.insert(r).inserted {
                throw s.module.node.error("relay \(s.module.name): route \(r.method) \(r.path) is served twice")
            }
            entries.append(
                Entry(settings: s, relay: relay, limiter: RateLimiter(perSecond: s.ratePerSecond, burst: s.burst)))
        }
        self.init(entries: entries)
    }

    /// The hub for `server`, or no relays when its section is invalid (``HeraldServer`` refuses to
    /// start with an invalid section, so this only matters for an API made without one).
    public static func lenient(_ server: ServerConfig) -> RelayHub { (try? RelayHub(server: server)) ?? .empty }

    /// 503 `unavailable` with `Retry-After: 5`: the server is stopping (clients retry it).
    public static var shuttingDown: ServerResponse {
        answer(error(503, "unavailable", "shutting down; retry later"), extra: [("Retry-After", "5")])
    }

    /// Whether `path` is a relay route (for the metrics label).
    public func serves(_ path: String) -> Bool { paths[path] != nil }

    /// The protocol name serving `path`, for logs and metrics.
    public func protocolName(for path: String) -> String? {
        guard let method = paths[path]?.first, let i = byRoute[RelayRoute(method, path)] else { return nil }
        return entries[i].settings.module.name
    }

    /// Answers `request` when its path is a relay route; nil otherwise (the API answers it).
    public func handle(
        _ request: ServerRequest, authenticator: TokenAuthenticator, router: Router, metrics: RelayMetrics,
        now: Double
    ) async -> ServerResponse? {
        guard let methods = paths[request.path] else { return nil }
        guard let i = byRoute[RelayRoute(request.method, request.path)] else {
            return RelayHub.answer(
                RelayHub.error(405, "method_not_allowed", "\(request.path) takes \(methods.joined(separator: ", "))"),
                extra: [("Allow", methods.joined(separator: ", "))])
        }
        let entry = entries[i]
        let name = entry.settings.module.name
        let response = await handle(
            request, entry: entry, router: router, authenticator: authenticator, metrics: metrics, now: now)
        metrics.countRequest(relay: name, code: response.status)
        return response
    }

    /// Access, rate limit and the protocol, for a request on one of `entry`'s routes.
    func handle(
        _ request: ServerRequest, entry: Entry, router: Router, authenticator: TokenAuthenticator,
        metrics: RelayMetrics, now: Double
    ) async -> ServerResponse {
        let route = RelayRoute(request.method, request.path)
        let name = entry.settings.module.name
        let caller: (key: String, token: APIToken?)
        switch RelayHub.admit(request, access: entry.settings.access, authenticator: authenticator) {
        case .success(let c): caller = c
        case .failure(let refused): return RelayHub.answer(refused.response)
        }
        if let wait = entry.limiter.take(caller.key, now: now) {
            return RelayHub.answer(
                RelayHub.error(429, "rate_limited", "over the relay's rate limit; retry in \(wait) s"),
                extra: [("Retry-After", String(wait))])
        }
        let delivery = RelayDelivery(
            channelName: entry.settings.module.channel, clock: router.clock,
            channel: { router.channel(named: $0) }, stateStore: { router.store.channelState($0) },
            countPush: { metrics.countPush(relay: name, outcome: $0.rawValue) })
        let relayRequest = RelayRequest(
            route: route, headers: request.headers, body: request.body, clientAddress: request.clientAddress,
            tokenName: caller.token?.name, scopes: caller.token?.scopes ?? [])
        let response = await entry.relay.handle(relayRequest, delivery: delivery)
        if response.status >= 500 {
            router.logger.warning(
                "relay request failed upstream",
                ["protocol": name, "status": String(response.status)])
        }
        return RelayHub.answer(response)
    }

    /// Why a caller was not let in, as the answer.
    struct Refused: Error {
        var response: RelayResponse
    }

    /// Lets a request in: `auth: none`, a bearer token with scope `relay`, or an allowed address.
    /// The caller key (for the rate limit) is the token's name or the client address.
    static func admit(
        _ request: ServerRequest, access: RelayAccess, authenticator: TokenAuthenticator
    ) -> Result<(key: String, token: APIToken?), Refused> {
        var bearer: String?
        if let header = request.header("authorization") {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                bearer = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        if let bearer, !bearer.isEmpty {
            guard let token = authenticator.authenticate(bearer) else {
                return .failure(Refused(response: error(401, "unauthorized", "unknown token")))
            }
            guard token.scopes.contains("relay") else {
                return .failure(
                    Refused(response: error(403, "forbidden", "token \(token.name) lacks the scope relay")))
            }
            return .success(("token:" + token.name, token))
        }
        if access.open || access.allows(request.clientAddress) {
            return .success(("address:" + request.clientAddress, nil))
        }
        return .failure(
            Refused(response: error(401, "unauthorized", "send Authorization: Bearer <token with scope relay>")))
    }

    /// `{ok:false, code, error}`: the shape of every answer the hub gives itself.
    static func error(_ status: Int, _ code: String, _ message: String) -> RelayResponse {
        RelayResponse(status, ["ok": false, "code": .string(code), "error": .string(message)])
    }

    static func answer(_ r: RelayResponse, extra: [(name: String, value: String)] = []) -> ServerResponse {
        let headers =
            [("Content-Type", "application/json")] + r.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return ServerResponse(
            status: r.status, headers: headers + extra, body: .bytes(r.body.canonicalBytes + [0x0A]))
    }
}
