import ChannelAPI
import Foundation
import HeraldMHD
import HeraldSync
import Router

/// The HTTP API of `herald serve` (http-api.md), as a function from a ``ServerRequest`` to a
/// ``ServerResponse`` with the router behind it. No socket here: ``HeraldServer`` connects it to
/// libmicrohttpd, and tests (or a fuzzer) can call ``handle(_:)`` directly.
public final class HeraldAPI: Sendable {
    /// What may change on reload: the tokens and limits of the `server:` section.
    struct Settings: Sendable {
        var server: ServerConfig
        var authenticator: TokenAuthenticator
        var limiter: RateLimiter
        /// The relay endpoints of `server.relays` (docs/relay-server.md).
        var relays: RelayHub
        /// The routes of every resource, then the relays' routes (an API route wins a tie).
        var routes: RouteTable
    }

    let router: Router
    let settings: Locked<Settings>
    /// The metrics `GET /metrics` renders.
    public let metrics: ServerMetrics
    let signal = EventSignal()
    /// The newest event-log entries, read once for every stream (made at the first stream).
    let tailStorage = Locked<EventLogTail?>(nil)
    let stopping = Locked(false)
    let streams = Locked<[ObjectIdentifier: ResponseStream]>([:])
    /// Open event streams and waiting long polls, per token name (`max-streams-per-token`,
    /// `max-long-polls-per-token`).
    let tokenSlots = Locked<(streams: [String: Int], polls: [String: Int])>(([:], [:]))
    /// Monotonic seconds (the rate limiter's time; tests inject one).
    let now: @Sendable () -> Double
    /// Where event-stream writers run (the server's handler threads); nil: the global executor.
    let executor: HandlerExecutor?
    /// Group commit of accepted sends (`wait=none`): one store transaction for every send that
    /// arrives while the previous one commits.
    let accepts: GroupCommit<HeraldNotification, Int>
    /// Group commit of device registrations, likewise.
    let registrations: GroupCommit<Router.PreparedRegistration, UpsertResult>
    /// Group commit of lifecycle events (`POST /v1/notifications/{id}/events`; the apps'
    /// confirmations of local pushes come as fast as the notifications), likewise.
    let lifecycleEvents: GroupCommit<ChannelEvent, LifecycleEvent>
    /// The resources served (their routes join the relays' in ``Settings/routes``).
    let resources: [any APIResource]

    /// Creates the API over `router` with the `server:` settings `server`, serving `resources`;
    /// event-stream writers run on `executor` when given.
    public init(
        router: Router, server: ServerConfig, metrics: ServerMetrics = ServerMetrics(),
        executor: HandlerExecutor? = nil,
        now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 },
        resources: [any APIResource] = HeraldAPI.resources
    ) {
        self.router = router
        self.resources = resources
        self.executor = executor
        self.metrics = metrics
        self.now = now
        settings = Locked(HeraldAPI.settings(server, resources: resources))
        accepts = GroupCommit(label: "herald.accept", limit: Router.groupCommitLimit) { [router] batch in
            router.enqueue(batch: batch)
        }
        registrations = GroupCommit(label: "herald.register", limit: Router.groupCommitLimit) { [router] batch in
            router.storeRegistrations(batch: batch)
        }
        lifecycleEvents = GroupCommit(label: "herald.events", limit: Router.groupCommitLimit) { [router] batch in
            router.recordEvents(batch: batch)
        }
    }

    static func settings(_ server: ServerConfig, resources: [any APIResource]) -> Settings {
        let relays = RelayHub.lenient(server)
        return Settings(
            server: server, authenticator: TokenAuthenticator(tokens: server.tokens),
            limiter: RateLimiter(perSecond: server.ratePerSecond, burst: server.burst),
            relays: relays, routes: RouteTable(resources, extra: relays.routes))
    }

    /// Swaps in new tokens, limits, timeouts and relays (SIGHUP); open event streams keep going.
    public func reload(server: ServerConfig) {
        let next = HeraldAPI.settings(server, resources: resources)
        settings.withLock { $0 = next }
    }

    /// Router events wake the event streams; call once, keep the task, cancel it to stop.
    public func forwardRouterEvents() -> Task<Void, Never> {
        let events = router.events()
        let signal = self.signal
        let metrics = self.metrics
        return Task {
            for await event in events {
                if case .delivery(let d) = event, d.state != .pending {
                    metrics.countDelivery(
                        channel: d.channel, outcome: d.state.reportOutcome,
                        seconds: ServerMetrics.secondsSincePlanned(deliveryId: d.id, at: d.updatedAt))
                }
                signal.notify()
            }
        }
    }

    /// Marks the API as stopping: new requests get 503 and open event streams end.
    public func beginShutdown() {
        stopping.withLock { $0 = true }
        for s in streams.withLock({ Array($0.values) }) { s.finish() }
        signal.notify()
    }

    var isStopping: Bool { stopping.withLock { $0 } }

    // MARK: Routing

    /// The resources `herald serve` serves: the one list a new resource joins
    /// (docs/architecture.md, "Adding an HTTP resource").
    public static let resources: [any APIResource] = [
        HealthAPI(), ConsoleAPI(), DevicesAPI(), NotificationsAPI(), EventsAPI(), PublicKeysAPI(),
        ChannelWebhooksAPI(), RelayTrafficAPI(), LocalStreamsAPI(),
    ]

    /// Answers one request; never throws, every failure is a JSON error (§6).
    public func handle(_ request: ServerRequest) async -> ServerResponse {
        let started = now()
        let routes = settings.withLock { $0.routes }
        let match = routes.match(method: request.method, path: request.path, api: self)
        var label = "unmatched"
        var route: APIRoute?
        var response: ServerResponse
        do {
            switch match {
            case .notFound:
                throw APIError.notFound("no route \(request.method) \(request.path)")
            case .methodNotAllowed(let pattern, let allow):
                label = pattern
                throw APIError(
                    405, "method_not_allowed", "\(pattern) takes \(allow.joined(separator: ", "))",
                    headers: [("Allow", allow.joined(separator: ", "))])
            case .found(let found, let parameters, let pattern):
                label = pattern
                route = found
                response = try await call(found, request: request, parameters: parameters, label: pattern)
            }
        } catch {
            let e = apiError(error, request: request, route: route, label: label)
            response = route?.errorResponse?(e) ?? e.response
        }
        if response.status < 300, route?.writesStore == true,
            !response.headers.contains(where: { $0.name == "Herald-Replayed" })
        {
            // A write went through (a replayed send wrote nothing): the store takes writes again.
            router.storeHealth.noteSuccess()
        }
        metrics.countRequest(route: label, code: response.status, seconds: now() - started)
        return response
    }

    /// The checks every route shares, in order (stopping, body limit, access), then its handler.
    func call(_ route: APIRoute, request: ServerRequest, parameters: [String: String], label: String)
        async throws -> ServerResponse
    {
        if isStopping, !route.servedWhileStopping { throw APIError.unavailable("shutting down") }
        if let limit = route.maxBody, request.body.count > limit {
            throw APIError(413, "payload_too_large", "the body is over \(label)'s limit (\(limit) bytes)")
        }
        let caller = try authorize(request, access: route.access, label: label)
        return try await route.handler(self, APICall(request: request, parameters: parameters, caller: caller))
    }

    /// What a thrown error answers: itself for an ``APIError``, 422 of the route's subject for a
    /// ``ValidationError``, 409 for an ``AddressConflict``, ``failure(_:request:label:)`` otherwise.
    func apiError(_ error: any Error, request: ServerRequest, route: APIRoute?, label: String) -> APIError {
        switch error {
        case let e as APIError: e
        case let e as ValidationError: APIError.invalid(e, subject: route?.subject ?? "request")
        case let e as AddressConflict: APIError(409, "conflict", e.description)
        default: failure(error, request: request, label: route == nil ? nil : label)
        }
    }

    /// Seconds a client is asked to wait (`Retry-After`) before retrying a request refused because
    /// the store cannot serve.
    static let storeRetryAfter = 5

    /// The answer to an error that is not an ``APIError`` or a ``ValidationError``: 503
    /// `unavailable` with `Retry-After` when the store cannot serve now (a full disk, an I/O error, a
    /// read-only store, an unreachable database: ``StoreHealth/unavailableReason(of:)``, remembered
    /// for `/healthz`), 404 for an unknown notification, 500 otherwise. The answer says what failed,
    /// never where: the store's path, host, port, user and database go to the log only.
    func failure(_ error: any Error, request: ServerRequest, label: String?) -> APIError {
        if case StoreError.unknownNotification(let id) = error { return .notFound("no notification \(id)") }
        let context = ["route": label ?? request.path, "method": request.method, "error": "\(error)"]
        if let reason = StoreHealth.unavailableReason(of: error) {
            router.storeHealth.noteFailure(reason, at: router.clock.now())
            router.logger.error("the store could not serve a request", context)
            return HeraldAPI.storeUnavailable(reason)
        }
        router.logger.error("a request failed", context)
        switch error {
        case StoreError.corrupt, StoreError.duplicateNotification:
            return APIError(500, "store", "\(error)")
        case is StoreError:
            return APIError(500, "store", "the store failed; the server's log has the details")
        default:
            return APIError(500, "internal", "an internal error; the server's log has the details")
        }
    }

    /// 503 `unavailable` with `Retry-After`: the store cannot serve now, for `reason`.
    static func storeUnavailable(_ reason: String) -> APIError {
        APIError(
            503, "unavailable", "\(reason); retry later", headers: [("Retry-After", String(storeRetryAfter))])
    }
}
