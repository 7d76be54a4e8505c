import ChannelAPI
import Foundation
import HeraldMHD
import HeraldSync
import Router

/// The relay endpoints of `herald serve` (docs/relay-server.md): each relay route is an ``APIRoute`` in
/// the API's one route table (``routes``), so matching, 404/405, the stopping check and the request
/// metrics are the API's. The hub lets a request in (a route with ``RelayRoute/Access/relay``: a
/// bearer token with scope `relay`, an allowed client address, or `auth: none` on loopback), applies
/// the relay's rate limit, and hands it to the protocol with a ``RelayDelivery``. Knows no protocol:
/// each is an ``InboundRelay`` made from its ``InboundRelayModule``.
public struct RelayHub: Sendable {
    /// One configured relay.
    struct Entry: Sendable {
        var settings: RelaySettings
        var relay: any InboundRelay
        var limiter: RateLimiter
    }

    let entries: [Entry]

    /// No relays.
    public static let empty = RelayHub(entries: [])

    init(entries: [Entry]) { self.entries = entries }

    /// The relays of `server.relays`; throws a config error for a bad section or two relays on one route.
    public init(server: ServerConfig, modules: [InboundRelayModule] = InboundRelayModule.builtIn) throws(ConfigError) {
        var entries: [Entry] = []
        var seen: Set<String> = []
        for s in try RelaysConfig.read(server.relays, loopback: server.isLoopback, modules: modules) {
            guard let module = modules.first(where: { $0.name == s.module.name }) else { continue }
            let relay = try module.make(s.module)
            for r in relay.routes where !seen.insert(r.method + " " + RelayHub.shape(r.path)).inserted {
                throw s.module.node.error("relay \(s.module.name): route \(r.method) \(r.path) is served twice")
            }
            entries.append(
                Entry(settings: s, relay: relay, limiter: RateLimiter(perSecond: s.ratePerSecond, burst: s.burst)))
        }
        self.init(entries: entries)
    }

    /// A template with its `{…}` names blanked: two routes of one shape match the same paths.
    static func shape(_ path: String) -> String {
        RoutePattern.segments(of: path).map { $0.hasPrefix("{") && $0.hasSuffix("}") ? "{}" : $0 }.joined(
            separator: "/")
    }

    /// The hub for `server`, or no relays when its section is invalid (``HeraldServer`` refuses to
    /// start with an invalid section, so this only matters for an API made without one).
    public static func lenient(_ server: ServerConfig) -> RelayHub { (try? RelayHub(server: server)) ?? .empty }

    /// The protocol name serving `method` on `path`, for logs and metrics.
    public func protocolName(method: String = "POST", for path: String) -> String? {
        let parts = RoutePattern.segments(of: path)
        for e in entries {
            for r in e.relay.routes where r.method == method && RoutePattern(r.path).match(parts) != nil {
                return e.settings.module.name
            }
        }
        return nil
    }

    /// Every relay route as a route of the API's table. Errors of the shared checks (stopping, body
    /// limit) answer in the relays' own shape, `{ok:false, code, error}`.
    public var routes: [APIRoute] {
        entries.flatMap { entry in
            entry.relay.routes.map { route in
                APIRoute(
                    route.method, RoutePattern(route.path), access: .open, subject: "relay request",
                    errorResponse: RelayHub.errorResponse
                ) { api, call in
                    let (auth, now) = (api.settings.withLock { $0.authenticator }, api.now())
                    let pushes = Locked<[String: Int]>([:])
                    let (response, caller) = await RelayHub.handle(
                        call, route: route, entry: entry, router: api.router, authenticator: auth,
                        metrics: api.metrics.relays, pushes: pushes, now: now)
                    let name = entry.settings.module.name
                    api.metrics.relays.countRequest(relay: name, code: response.status)
                    let record = RelayRequestRecord(
                        at: api.router.clock.now(), relay: name, route: route.path, status: response.status,
                        pushes: pushes.withLock { $0 }, caller: caller)
                    api.metrics.relays.history.append(record, store: api.router.store, logger: api.router.logger)
                    return response
                }
            }
        }
    }

    /// An error of the API's shared checks in the relays' shape; a 503 carries `Retry-After: 5`.
    static func errorResponse(_ e: APIError) -> ServerResponse {
        var extra = e.headers
        if e.status == 503, !extra.contains(where: { $0.name.lowercased() == "retry-after" }) {
            extra.append(("Retry-After", "5"))
        }
        return answer(error(e.status, e.code, e.message), extra: extra)
    }

    /// Access, rate limit and the protocol, for a request on one of `entry`'s routes: the answer and
    /// the caller as the history records it (``RelayHistory/caller(tokenName:address:)``). `pushes`
    /// counts the request's pushes by outcome.
    static func handle(
        _ call: APICall, route: RelayRoute, entry: Entry, router: Router, authenticator: TokenAuthenticator,
        metrics: RelayMetrics, pushes: Locked<[String: Int]>, now: Double
    ) async -> (ServerResponse, caller: String) {
        let request = call.request
        let name = entry.settings.module.name
        let caller: (key: String, token: APIToken?)
        if route.access == .own {
            caller = ("address:" + request.clientAddress, nil)
        } else {
            switch RelayHub.admit(request, access: entry.settings.access, authenticator: authenticator) {
            case .success(let c): caller = c
            case .failure(let refused):
                return (
                    RelayHub.answer(refused.response),
                    RelayHistory.caller(tokenName: nil, address: request.clientAddress)
                )
            }
        }
        let recorded = RelayHistory.caller(tokenName: caller.token?.name, address: request.clientAddress)
        if let wait = RelayHub.limit(caller.key, entry: entry, router: router, now: now) {
            let refused = RelayHub.answer(
                RelayHub.error(429, "rate_limited", "over the relay's rate limit; retry in \(wait) s"),
                extra: [("Retry-After", String(wait))])
            return (refused, recorded)
        }
        let delivery = RelayDelivery(
            channelName: entry.settings.module.channel, clock: router.clock,
            channel: { router.channel(named: $0) }, stateStore: { router.store.channelState($0) },
            countPush: { outcome in
                metrics.countPush(relay: name, outcome: outcome.rawValue)
                pushes.withLock { $0[outcome.rawValue, default: 0] += 1 }
            }, gate: metrics.pushGate)
        let relayRequest = RelayRequest(
            route: route, path: request.path, parameters: call.parameters, query: request.query,
            headers: request.headers, body: request.body, clientAddress: request.clientAddress,
            tokenName: caller.token?.name, scopes: caller.token?.scopes ?? [])
        let response = await entry.relay.handle(relayRequest, delivery: delivery)
        if response.status >= 500 {
            router.logger.warning(
                "relay request failed upstream",
                ["protocol": name, "status": String(response.status)])
        }
        return (RelayHub.answer(response), recorded)
    }

    /// The caller's rate limit: in the store when the store is shared (PostgreSQL: every `herald
    /// serve` on it takes from one bucket), else this process's own limiter (SQLite: one process).
    /// When the store fails, the process's own limiter answers.
    static func limit(_ key: String, entry: Entry, router: Router, now: Double) -> Int? {
        guard router.store is PostgresStore else { return entry.limiter.take(key, now: now) }
        let stored = StoredRateLimit(
            store: router.store.channelState("relay.limits." + entry.settings.module.name),
            perSecond: entry.settings.ratePerSecond, burst: entry.settings.burst)
        do {
            return try stored.take(key, now: router.clock.now().timeIntervalSince1970)
        } catch {
            return entry.limiter.take(key, now: now)
        }
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
