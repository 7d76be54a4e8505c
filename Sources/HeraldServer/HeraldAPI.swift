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
        /// The relay endpoints of `server.relays` (docs/relays.md).
        var relays: RelayHub
    }

    let router: Router
    let settings: Locked<Settings>
    /// The metrics `GET /metrics` renders.
    public let metrics: ServerMetrics
    let signal = EventSignal()
    /// The newest event-log entries, read once for every stream (made at the first stream).
    private let tailStorage = Locked<EventLogTail?>(nil)
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

    /// Creates the API over `router` with the `server:` settings `server`; event-stream writers run
    /// on `executor` when given.
    public init(
        router: Router, server: ServerConfig, metrics: ServerMetrics = ServerMetrics(),
        executor: HandlerExecutor? = nil,
        now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    ) {
        self.router = router
        self.executor = executor
        self.metrics = metrics
        self.now = now
        settings = Locked(HeraldAPI.settings(server))
        accepts = GroupCommit(label: "herald.accept", limit: Router.groupCommitLimit) { [router] batch in
            router.enqueue(batch: batch)
        }
        registrations = GroupCommit(label: "herald.register", limit: Router.groupCommitLimit) { [router] batch in
            router.storeRegistrations(batch: batch)
        }
    }

    static func settings(_ server: ServerConfig) -> Settings {
        Settings(
            server: server, authenticator: TokenAuthenticator(tokens: server.tokens),
            limiter: RateLimiter(perSecond: server.ratePerSecond, burst: server.burst),
            relays: RelayHub.lenient(server))
    }

    /// Swaps in new tokens, limits and timeouts (SIGHUP); open event streams keep going.
    public func reload(server: ServerConfig) { settings.withLock { $0 = HeraldAPI.settings(server) } }

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

    /// A route of http-api.md §3: its pattern (the metrics label) and the methods it takes.
    struct Route {
        let pattern: String
        let methods: [String]
        let parameters: [String]
    }

    /// Matches a path to a route pattern and its `{…}` values.
    static func match(_ path: String) -> Route? {
        if let console = consoleRoute(path) { return console }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch parts.count {
        case 1 where parts[0] == "healthz": return Route(pattern: "/healthz", methods: ["GET"], parameters: [])
        case 1 where parts[0] == "metrics": return Route(pattern: "/metrics", methods: ["GET"], parameters: [])
        default: break
        }
        guard parts.count >= 2, parts[0] == "v1" else { return nil }
        let rest = Array(parts.dropFirst())
        switch rest.count {
        case 1 where rest[0] == "devices":
            return Route(pattern: "/v1/devices", methods: ["GET", "POST", "DELETE"], parameters: [])
        case 1 where rest[0] == "notifications":
            return Route(pattern: "/v1/notifications", methods: ["GET", "POST"], parameters: [])
        case 1 where rest[0] == "events": return Route(pattern: "/v1/events", methods: ["GET"], parameters: [])
        case 2 where rest[0] == "notifications" && !rest[1].isEmpty:
            return Route(pattern: "/v1/notifications/{id}", methods: ["GET"], parameters: [rest[1]])
        case 3 where rest[0] == "notifications" && !rest[1].isEmpty && rest[2] == "events":
            return Route(pattern: "/v1/notifications/{id}/events", methods: ["POST"], parameters: [rest[1]])
        case 3 where rest[0] == "notifications" && !rest[1].isEmpty && rest[2] == "action":
            return Route(pattern: "/v1/notifications/{id}/action", methods: ["GET"], parameters: [rest[1]])
        case 2 where rest[0] == "webpush" && rest[1] == "vapid-public-key":
            return Route(pattern: "/v1/webpush/vapid-public-key", methods: ["GET"], parameters: [])
        case 3 where rest[0] == "channels" && !rest[1].isEmpty && !rest[2].isEmpty:
            return Route(pattern: "/v1/channels/{name}/{kind}", methods: ["POST"], parameters: [rest[1], rest[2]])
        default: return nil
        }
    }

    /// Answers one request; never throws, every failure is a JSON error (§6).
    public func handle(_ request: ServerRequest) async -> ServerResponse {
        let started = now()
        let (relays, auth) = settings.withLock { ($0.relays, $0.authenticator) }
        if relays.serves(request.path) {
            let relayed =
                isStopping
                ? RelayHub.shuttingDown
                : await relays.handle(
                    request, authenticator: auth, router: router, metrics: metrics.relays, now: started)
                    ?? RelayHub.shuttingDown
            metrics.countRequest(route: request.path, code: relayed.status, seconds: now() - started)
            return relayed
        }
        let route = HeraldAPI.match(request.path)
        var response: ServerResponse
        do {
            response = try await dispatch(request, route: route)
        } catch let e as APIError {
            response = e.response
        } catch let e as ValidationError {
            response = APIError.invalid(e, subject: HeraldAPI.subject(of: route?.pattern)).response
        } catch let e as AddressConflict {
            response = APIError(409, "conflict", e.description).response
        } catch {
            response = failure(error, request: request, route: route).response
        }
        if response.status < 300, HeraldAPI.storeWrites.contains("\(request.method) \(route?.pattern ?? "")"),
            !response.headers.contains(where: { $0.name == "Herald-Replayed" })
        {
            // A write went through (a replayed send wrote nothing): the store takes writes again.
            router.storeHealth.noteSuccess()
        }
        metrics.countRequest(route: route?.pattern ?? "unmatched", code: response.status, seconds: now() - started)
        return response
    }

    /// The routes whose success means the store took a write.
    static let storeWrites: Set<String> = [
        "POST /v1/devices", "DELETE /v1/devices", "POST /v1/notifications", "POST /v1/notifications/{id}/events",
    ]

    /// What a route's body is, for the code of its 422 (`invalid_device`, `invalid_notification`, …).
    static func subject(of pattern: String?) -> String {
        switch pattern {
        case "/v1/devices": "device"
        case "/v1/notifications": "notification"
        case "/v1/notifications/{id}/events": "event"
        case "/v1/channels/{name}/{kind}": "update"
        default: "request"
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
    func failure(_ error: any Error, request: ServerRequest, route: Route?) -> APIError {
        if case StoreError.unknownNotification(let id) = error { return .notFound("no notification \(id)") }
        let context = ["route": route?.pattern ?? request.path, "method": request.method, "error": "\(error)"]
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

    func dispatch(_ request: ServerRequest, route: Route?) async throws -> ServerResponse {
        guard let route else { throw APIError.notFound("no route \(request.method) \(request.path)") }
        let method = request.method == "HEAD" && route.methods.contains("GET") ? "GET" : request.method
        guard route.methods.contains(method) else {
            throw APIError(
                405, "method_not_allowed", "\(route.pattern) takes \(route.methods.joined(separator: ", "))",
                headers: [("Allow", route.methods.joined(separator: ", "))])
        }
        if isStopping, route.pattern != "/healthz" { throw APIError.unavailable("shutting down") }
        switch (method, route.pattern) {
        case ("GET", "/healthz"): return healthz()
        case ("GET", "/metrics"):
            if !settings.withLock({ $0.server.metricsPublic }) {
                _ = try authorize(request, scopes: ["metrics"], route: route)
            }
            return try renderMetrics()
        case ("POST", "/v1/channels/{name}/{kind}"):
            return try await channelWebhook(request, name: route.parameters[0], kind: route.parameters[1])
        default: break
        }
        if let console = try await consoleResponse(request, method: method, route: route) { return console }
        switch (method, route.pattern) {
        case ("POST", "/v1/devices"):
            return try await registerDevice(request, token: try authorize(request, scopes: ["devices"], route: route))
        case ("GET", "/v1/devices"):
            return try listDevices(request, token: try authorize(request, scopes: ["read"], route: route))
        case ("DELETE", "/v1/devices"):
            return try removeDevices(request, token: try authorize(request, scopes: ["devices"], route: route))
        case ("POST", "/v1/notifications"):
            return try await send(request, token: try authorize(request, scopes: ["send"], route: route))
        case ("GET", "/v1/notifications"):
            return try listNotifications(request, token: try authorize(request, scopes: ["read"], route: route))
        case ("GET", "/v1/notifications/{id}"):
            let token = try authorize(request, scopes: ["read"], route: route)
            return try notification(route.parameters[0], token: token, request: request)
        case ("POST", "/v1/notifications/{id}/events"):
            let token = try authorize(request, scopes: ["events"], route: route)
            return try recordEvent(request, id: route.parameters[0], token: token)
        case ("GET", "/v1/notifications/{id}/action"):
            let token = try authorize(request, scopes: ["read"], route: route)
            return try await waitForAction(request, id: route.parameters[0], token: token)
        case ("GET", "/v1/events"):
            return try eventStream(request, token: try authorize(request, scopes: ["read", "events"], route: route))
        case ("GET", "/v1/webpush/vapid-public-key"):
            _ = try authorize(request, scopes: ["read", "devices"], route: route)
            return try await vapidKey(request)
        default:
            throw APIError.notFound("no route \(request.method) \(request.path)")
        }
    }

    // MARK: Auth

    /// The token of the request (`Authorization: Bearer`, or `?token=` on `/v1/events` only), after
    /// the rate limit and a check that it has one of `scopes`.
    func authorize(_ request: ServerRequest, scopes: Set<String>, route: Route) throws -> APIToken {
        var bearer: String?
        if let header = request.header("authorization") {
            let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if parts.count == 2, parts[0].lowercased() == "bearer" {
                bearer = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        if bearer == nil, route.pattern == "/v1/events", let t = request.query["token"] { bearer = t }
        guard let bearer, !bearer.isEmpty else {
            throw APIError.unauthorized(
                route.pattern != "/v1/events" && request.query["token"] != nil && route.pattern != "/v1/devices"
                    ? "a token in the query is only accepted on /v1/events; send Authorization: Bearer"
                    : "send Authorization: Bearer <token>")
        }
        let (auth, limiter) = settings.withLock { ($0.authenticator, $0.limiter) }
        guard let token = auth.authenticate(bearer) else { throw APIError.unauthorized("unknown token") }
        if let wait = limiter.take(token.name, now: now()) {
            throw APIError(
                429, "rate_limited", "token \(token.name) is over its rate limit; retry in \(wait) s",
                headers: [("Retry-After", String(wait))])
        }
        guard !token.scopes.isDisjoint(with: scopes) else {
            throw APIError.forbidden(
                "token \(token.name) lacks the scope \(scopes.sorted().joined(separator: " or ")) for \(route.pattern)")
        }
        return token
    }

    /// Refuses a write into a namespace the token does not cover (403).
    func requireCovers(_ token: APIToken, _ namespace: String) throws {
        guard token.covers(namespace) else {
            throw APIError.forbidden("token \(token.name) does not cover namespace \(namespace)")
        }
    }

    // MARK: Bodies

    /// The body as a JSON object: 415 unless `Content-Type` is `application/json`, 400 when it is
    /// not JSON (with the byte offset) or not an object.
    static func jsonObject(_ request: ServerRequest) throws -> JSONValue {
        let type = (request.header("content-type") ?? "").split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard type == "application/json" else {
            throw APIError(
                415, "unsupported_media_type",
                "send the body as Content-Type: application/json (got \(request.header("content-type") ?? "none"))")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(request.body)
        } catch {
            throw APIError(400, "invalid_json", error.description)
        }
        guard case .object = value else {
            throw APIError(400, "invalid_json", "the body must be a JSON object, not \(value.kindName)")
        }
        return value
    }

    static func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = [])
        -> ServerResponse
    {
        ServerResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers,
            body: .bytes(value.canonicalBytes + [0x0A]))
    }

    static func namespaceParameter(_ request: ServerRequest) throws -> String {
        let ns = request.query["namespace"] ?? "default"
        guard !ns.isEmpty else { throw APIError.badParameter("namespace", "must not be empty") }
        return ns
    }

    // MARK: Health and metrics

    /// 200 while the store can be read and written; 503 with the reason (what failed, never where)
    /// while the server stops, the store is read-only, or the last store write failed and a probe
    /// write (at most one per ``StoreHealth/probeInterval``) still fails. A read-only SQLite store is
    /// reopened read-write here once it is writable again (on its backoff).
    func healthz() -> ServerResponse {
        func unavailable(_ reason: String) -> ServerResponse {
            HeraldAPI.json(
                503, ["status": "unavailable", "reason": .string(reason)],
                headers: [("Retry-After", String(HeraldAPI.storeRetryAfter))])
        }
        if isStopping {
            return HeraldAPI.json(503, ["status": "unavailable", "reason": "shutting down"])
        }
        if let s = router.store as? SQLiteStore, s.recoverWritable() != nil {
            return unavailable("the store is read-only")
        }
        if let reason = router.checkStoreWrites() { return unavailable(reason) }
        do {
            _ = try router.store.lastEventSequence()
        } catch {
            router.logger.error("healthz: the store cannot be read", ["error": "\(error)"])
            return unavailable(StoreHealth.unavailableReason(of: error) ?? "the store cannot be read")
        }
        return HeraldAPI.json(200, ["status": "ok"])
    }

    func renderMetrics() throws -> ServerResponse {
        let counts = try router.store.outstandingCounts()
        // Counted by the database: reading every device here made each scrape cost memory in
        // proportion to the registrations (a serve bench's process grew from 42 to 158 MB).
        let platforms = try router.store.devicePlatformCounts(namespace: nil)
        let text = metrics.render(outboxPending: counts.pending + counts.retry, devicesByPlatform: platforms)
        return ServerResponse(
            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
            body: .bytes(Array(text.utf8)))
    }

    // MARK: Devices

    func registerDevice(_ request: ServerRequest, token: APIToken) async throws -> ServerResponse {
        let body = try HeraldAPI.jsonObject(request)
        var device = try router.device(json: body)
        try requireCovers(token, device.namespace)
        // A push address held in a namespace the token does not cover is not moved from there: the
        // registration is refused (409), naming nothing of the other namespace.
        device.movableNamespaces = token.namespaces
        // Validated here, concurrently; stored with the registrations arriving meanwhile (group commit).
        let prepared = try await router.prepareRegistration(device)
        let upsert = try await registrations.submit(prepared).get()
        let result = await router.finishRegistration(prepared, upsert)
        var o = result.json(for: device).objectValue ?? [:]
        o["device"] = router.listingJSON(of: device)
        for key in ["namespace", "deviceId", "platform"] { o.removeValue(forKey: key) }
        return HeraldAPI.json(200, .object(o))
    }

    func listDevices(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        let ns = try HeraldAPI.namespaceParameter(request)
        try requireCovers(token, ns)
        let list = try router.devices(namespace: ns)
        return HeraldAPI.json(200, ["devices": .array(list.map { router.listingJSON(of: $0) })])
    }

    func removeDevices(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        let ns = try HeraldAPI.namespaceParameter(request)
        try requireCovers(token, ns)
        let n: Int
        if let id = request.query["deviceId"], !id.isEmpty {
            n = try router.unregister(namespace: ns, deviceId: id, platform: request.query["platform"])
        } else if let t = request.query["token"], !t.isEmpty {
            n = try router.unregister(namespace: ns, token: t)
        } else {
            throw APIError.badParameter("deviceId", "give deviceId (and optionally platform) or token")
        }
        guard n > 0 else { throw APIError.notFound("no device matched in namespace \(ns)") }
        return ServerResponse(status: 204)
    }

    // MARK: Notifications

    func send(_ request: ServerRequest, token: APIToken) async throws -> ServerResponse {
        let body = try HeraldAPI.jsonObject(request)
        let notification = try HeraldNotification(json: body)
        try requireCovers(token, notification.namespace)
        let waitNone: Bool
        switch request.query["wait"] {
        case nil: waitNone = false
        case "none": waitNone = true
        case let other?: throw APIError.badParameter("wait", "only wait=none is known, got \(other)")
        }
        let replayed: [(name: String, value: String)] = [("Herald-Replayed", "true")]
        if waitNone {
            do {
                // Stored with the sends arriving meanwhile, in one transaction (group commit); the 202
                // comes after that commit. An id stored by this namespace fails alone in the batch,
                // with nothing written, and is answered below as a replay; an id another namespace
                // holds is stored under its scoped key (NotificationKey), as a new id would be.
                let planned = try await accepts.submit(notification).get()
                metrics.countNotification()
                return HeraldAPI.json(
                    202,
                    [
                        "id": .string(notification.id), "namespace": .string(notification.namespace),
                        "planned": .number(Double(planned)),
                    ])
            } catch StoreError.duplicateNotification {}
        }
        // Idempotent: never routed again. Ids are unique per namespace, so what is found is this
        // namespace's notification (another namespace's with the same id is neither found nor named).
        let (key, stored) = try router.storageKey(for: notification)
        if stored != nil {
            if waitNone {
                let deliveries = try router.store.deliveries(notificationId: key)
                return HeraldAPI.json(
                    202,
                    [
                        "id": .string(notification.id), "namespace": .string(notification.namespace),
                        "planned": .number(Double(deliveries.count)),
                    ], headers: replayed)
            }
        }
        if waitNone {
            // Refused as a duplicate, then gone (purged) before it was read: try again.
            return try await send(request, token: token)
        }
        let summary = try await router.sendSummarized(notification)
        // The replay is decided on one read of this namespace's key (Router.storageKey): a send of
        // another namespace stored meanwhile is never answered with its report. Checked again here.
        if summary.replayed, !token.covers(summary.namespace) || summary.namespace != notification.namespace {
            throw HeraldAPI.idInUse(notification.id)
        }
        if !summary.replayed { metrics.countNotification() }
        return reportResponse(summary, headers: summary.replayed ? replayed : [])
    }

    /// A send answered with another namespace's notification (409; never expected: ids are unique
    /// per namespace); it names nothing of that one.
    static func idInUse(_ id: String) -> APIError {
        APIError(409, "conflict", "notification id \(id) is already used; choose another id")
    }

    /// The delivery report of `summary`'s notification (contract §5, canonical JSON: the bytes of
    /// ``DeliveryReport/json``), written to the client as it is read from the store, a page at a
    /// time, so the answer to a 100,000-device send is never held whole (it is about 20 MB).
    ///
    /// The store is read synchronously, so the report is written from a thread of its own, which
    /// waits while the client has more than ``reportLowWater`` bytes unread; a client that reads
    /// nothing for `idle-timeout` is cut. A store failure midway ends the body early (the status is
    /// sent by then): the client sees a truncated document, and the failure is logged.
    func reportResponse(_ summary: SendSummary, headers: [(name: String, value: String)]) -> ServerResponse {
        // A report in flight when the server stops is still written whole (within the stop's wait).
        let stream = ResponseStream(endsWhenServerStops: false)
        let router = self.router
        let stall = settings.withLock { $0.server.idleTimeout }
        let writer = Thread {
            do {
                try router.writeReportJSON(of: summary, piece: HeraldAPI.reportChunk) { bytes in
                    guard HeraldAPI.write(bytes, to: stream, stall: stall) else { throw ReportWriteStopped() }
                }
            } catch is ReportWriteStopped {
            } catch {
                router.logger.error(
                    "the delivery report of \(summary.id) could not be read; its answer was cut short",
                    ["error": "\(error)"])
            }
            stream.finish()
        }
        writer.name = "herald.report"
        writer.start()
        return ServerResponse(
            status: 200, headers: [("Content-Type", "application/json")] + headers, body: .stream(stream))
    }

    /// Bytes of a report handed to the stream at once.
    static let reportChunk = 64 << 10
    /// A report's writer waits while the client has more than this unread.
    static let reportLowWater = 256 << 10

    /// Writes `bytes` to `stream` once the client has at most ``reportLowWater`` bytes unread (on a
    /// thread that may block: a report's writer); false when the client is gone or read nothing for
    /// `stall`.
    static func write(_ bytes: [UInt8], to stream: ResponseStream, stall: Duration) -> Bool {
        if stream.bufferedCount > reportLowWater {
            let room = Locked(false)
            let done = DispatchSemaphore(value: 0)
            Task {
                let ok = await stream.waitForRoom(atMost: reportLowWater, timeout: stall)
                room.withLock { $0 = ok }
                done.signal()
            }
            done.wait()
            guard room.withLock({ $0 }) else { return false }
        }
        return stream.write(bytes)
    }

    func listNotifications(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        let ns = try HeraldAPI.namespaceParameter(request)
        try requireCovers(token, ns)
        var limit = 50
        if let l = request.query["limit"] {
            guard let n = Int(l), (1...500).contains(n) else {
                throw APIError.badParameter("limit", "must be a whole number from 1 to 500")
            }
            limit = n
        }
        let entries: [HistoryEntry]
        if let before = request.query["before"] {
            // Newest first: the page after `before`, by its position (keyset), not by reading up to it.
            let cursor = try router.notificationKeys(publicID: before, covering: { $0 == ns }).first?.key ?? before
            guard let page = try router.history(namespace: ns, before: cursor, limit: limit) else {
                throw APIError.badParameter("before", "no notification \(before) in namespace \(ns)")
            }
            entries = page
        } else {
            entries = try router.history(namespace: ns, limit: limit)
        }
        return HeraldAPI.json(200, ["notifications": .array(entries.map(\.json))])
    }

    /// The stored notification the client's `id` names in the token's namespaces (`?namespace=`
    /// narrows them); 404 alike for unknown and foreign ids. Ids are unique per namespace: when the
    /// token covers several namespaces that each sent `id`, `?namespace=` must say which (400).
    func visibleEntry(_ id: String, token: APIToken, request: ServerRequest) throws -> HistoryEntry {
        let wanted = request.query["namespace"]
        let keys = try router.notificationKeys(
            publicID: id, covering: { token.covers($0) && (wanted == nil || $0 == wanted) })
        guard let first = keys.first else { throw APIError.notFound("no notification \(id)") }
        guard keys.count == 1 else {
            throw APIError.badParameter(
                "namespace",
                "notification id \(id) is used in namespaces \(keys.map(\.namespace).sorted().joined(separator: ", ")); "
                    + "add ?namespace= to choose one")
        }
        guard let entry = try router.history(id: first.key, limit: 1).first else {
            throw APIError.notFound("no notification \(id)")
        }
        return entry
    }

    func notification(_ id: String, token: APIToken, request: ServerRequest) throws -> ServerResponse {
        HeraldAPI.json(200, try visibleEntry(id, token: token, request: request).json)
    }

    func recordEvent(_ request: ServerRequest, id: String, token: APIToken) throws -> ServerResponse {
        let body = try HeraldAPI.jsonObject(request)
        let known: Set<String> = ["kind", "action", "deviceId", "data"]
        for key in (body.objectValue ?? [:]).keys.sorted() where !known.contains(key) {
            throw APIError.invalid(
                ValidationError(field: key, "unknown field (expected kind, action, deviceId, data)"), subject: "event")
        }
        guard let kindText = body["kind"]?.stringValue, let kind = ChannelEvent.Kind(rawValue: kindText) else {
            throw APIError.invalid(
                ValidationError(field: "kind", "must be received, tapped, dismissed or action"), subject: "event")
        }
        let action = body["action"]
        if kind == .action {
            guard let a = action?.stringValue, !a.isEmpty else {
                throw APIError.invalid(
                    ValidationError(field: "action", "kind action needs the action id"), subject: "event")
            }
        } else if action != nil {
            throw APIError.invalid(
                ValidationError(field: "action", "only kind action takes an action"), subject: "event")
        }
        var deviceId: String?
        if let d = body["deviceId"] {
            guard let s = d.stringValue, !s.isEmpty else {
                throw APIError.invalid(
                    ValidationError(field: "deviceId", "must be a non-empty string"), subject: "event")
            }
            deviceId = s
        }
        var data: [String: String] = [:]
        if let d = body["data"] {
            guard let o = d.objectValue else {
                throw APIError.invalid(ValidationError(field: "data", "must be an object of strings"), subject: "event")
            }
            for (k, v) in o {
                guard let s = v.stringValue else {
                    throw APIError.invalid(ValidationError(field: "data.\(k)", "must be a string"), subject: "event")
                }
                data[k] = s
            }
        }
        let key = try visibleEntry(id, token: token, request: request).notification.id
        let event = try router.recordEvent(
            ChannelEvent(
                notificationId: key, kind: kind, actionId: action?.stringValue, actionData: data, deviceId: deviceId))
        return HeraldAPI.json(201, ["event": event.json])
    }

    /// Takes one of the token's stream or long-poll slots, or throws 429 when it holds its limit.
    func takeSlot(_ token: APIToken, stream: Bool) throws {
        let limit = settings.withLock { stream ? $0.server.maxStreamsPerToken : $0.server.maxLongPollsPerToken }
        let taken = tokenSlots.withLock { slots -> Bool in
            let held = (stream ? slots.streams[token.name] : slots.polls[token.name]) ?? 0
            guard held < limit else { return false }
            if stream { slots.streams[token.name] = held + 1 } else { slots.polls[token.name] = held + 1 }
            return true
        }
        guard taken else {
            throw APIError(
                429, stream ? "too_many_streams" : "too_many_long_polls",
                stream
                    ? "token \(token.name) has max-streams-per-token (\(limit)) event streams open"
                    : "token \(token.name) has max-long-polls-per-token (\(limit)) long polls waiting",
                headers: [("Retry-After", "5"), ("Connection", "close")])
        }
    }

    /// Gives a slot of ``takeSlot(_:stream:)`` back.
    func releaseSlot(_ token: APIToken, stream: Bool) {
        tokenSlots.withLock { slots in
            if stream {
                let left = (slots.streams[token.name] ?? 1) - 1
                slots.streams[token.name] = left > 0 ? left : nil
            } else {
                let left = (slots.polls[token.name] ?? 1) - 1
                slots.polls[token.name] = left > 0 ? left : nil
            }
        }
    }

    func waitForAction(_ request: ServerRequest, id: String, token: APIToken) async throws -> ServerResponse {
        var seconds = 30
        if let t = request.query["timeout"] {
            guard let n = Int(t), (0...300).contains(n) else {
                throw APIError.badParameter("timeout", "must be a whole number of seconds from 0 to 300")
            }
            seconds = n
        }
        let key = try visibleEntry(id, token: token, request: request).notification.id
        try takeSlot(token, stream: false)
        defer { releaseSlot(token, stream: false) }
        // Woken by this process's router events; the store is read at least once a second, so an
        // action recorded by another process sharing the store (`herald event`) is seen too.
        let deadline = ContinuousClock.now + .seconds(seconds)
        while true {
            let generation = signal.generation
            if let event = try router.store.events(notificationId: key).first(where: { $0.kind == .action }) {
                return HeraldAPI.json(200, ["event": event.json])
            }
            let left = deadline - ContinuousClock.now
            if left <= .zero || Task.isCancelled || isStopping { return ServerResponse(status: 204) }
            await signal.wait(after: generation, timeout: min(left, .seconds(1)))
        }
    }

    // MARK: Event stream

    /// Events written to a stream at a time.
    static let streamPage = 64
    /// A stream's writer waits while more than this many bytes are unread by its client.
    static let streamLowWater = 16 << 10

    /// The shared ``EventLogTail``, made at the first stream.
    func eventLogTail() throws -> EventLogTail {
        try tailStorage.withLock { t in
            if let t { return t }
            let made = try EventLogTail(store: router.store)
            t = made
            return made
        }
    }

    func eventStream(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        var filter: [String]?
        var patternFilter: APIToken?
        if let ns = request.query["namespace"] {
            try requireCovers(token, ns)
            filter = [ns]
        } else if let exact = token.exactNamespaces {
            filter = exact
        } else {
            patternFilter = token
        }
        var since: Int64
        if let last = request.header("last-event-id") ?? request.query["since"] {
            guard let n = Int64(last.trimmingCharacters(in: .whitespaces)), n >= 0 else {
                throw APIError.badParameter("since", "must be an event id (a whole number)")
            }
            since = n
        } else {
            since = try router.store.lastEventSequence()
        }
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
        ]
        // HEAD: the head only, no stream and no slot.
        if request.method == "HEAD" { return ServerResponse(status: 200, headers: headers) }
        let tail = try eventLogTail()
        try takeSlot(token, stream: true)
        let stream = ResponseStream()
        let key = ObjectIdentifier(stream)
        streams.withLock { $0[key] = stream }
        stream.onClose { [weak self] in
            self?.releaseSlot(token, stream: true)
            _ = self?.streams.withLock { $0.removeValue(forKey: key) }
        }
        let signal = self.signal
        let (keepalive, stall) = settings.withLock { ($0.server.keepalive, $0.server.idleTimeout) }
        Task(executorPreference: executor) { [weak self] in
            // An opening comment makes clients and proxies see the stream at once. A write that is
            // refused (the client is gone, or stopped reading) ends the stream; a client that
            // reconnects with Last-Event-ID misses nothing.
            guard stream.write(Array(": stream\n\n".utf8)) else { return stream.finish() }
            var lastWrite = ContinuousClock.now
            // Until the response is finished, not only closed: a stream finished with more than the
            // low-water mark unread (the server stopping, a test's or fuzzer's handler) made
            // `waitForRoom` return at once, and this loop spun, starting a timer task each turn
            // until the bytes were sent (the HTTP API fuzzer ran out of memory on it).
            while !stream.isFinished {
                if self?.isStopping ?? true {
                    stream.finish()
                    return
                }
                // Backpressure: a client that reads slower than events come keeps them in the shared
                // tail (once for every stream), not in its own buffer (once per stream).
                // A client that reads nothing for idle-timeout is cut (it resumes with Last-Event-ID).
                if stream.bufferedCount > HeraldAPI.streamLowWater {
                    guard await stream.waitForRoom(atMost: HeraldAPI.streamLowWater, timeout: stall) else {
                        return stream.finish()
                    }
                    continue
                }
                let generation = signal.generation
                let page: [EventLogTail.Item]
                do {
                    page = try tail.items(
                        after: since, namespaces: filter, limit: HeraldAPI.streamPage, generation: generation)
                } catch {
                    stream.finish()
                    return
                }
                if let last = page.last { since = last.entry.sequence }
                var bytes: [UInt8] = []
                for item in page where patternFilter?.covers(item.entry.namespace) ?? true {
                    bytes.append(contentsOf: item.frame)
                }
                if !bytes.isEmpty {
                    guard stream.write(bytes) else { return stream.finish() }
                    lastWrite = .now
                }
                if page.count == HeraldAPI.streamPage { continue }
                if ContinuousClock.now - lastWrite >= keepalive {
                    guard stream.write(Array(": keepalive\n\n".utf8)) else { return stream.finish() }
                    lastWrite = .now
                }
                // Woken by this process's router; other processes sharing the store are seen within 1 s.
                let untilKeepalive = keepalive - (ContinuousClock.now - lastWrite)
                await signal.wait(
                    after: generation, timeout: min(.seconds(1), max(.milliseconds(10), untilKeepalive)))
            }
        }
        return ServerResponse(status: 200, headers: headers, body: .stream(stream))
    }

    // MARK: Web Push key and channel webhooks

    func vapidKey(_ request: ServerRequest) async throws -> ServerResponse {
        let wanted = request.query["channel"]
        let candidates = router.config.channels.filter { $0.type == "webpush" && (wanted == nil || $0.name == wanted) }
        guard let spec = candidates.first, let channel = router.channel(named: spec.name),
            let provider = channel as? any PublicKeyProviding
        else {
            throw APIError.notFound(
                wanted.map { "no webpush channel named \($0)" } ?? "the config has no webpush channel")
        }
        let key = try await provider.publicKey(rotate: false)
        return HeraldAPI.json(200, ["publicKey": .string(key), "channel": .string(spec.name)])
    }

    func channelWebhook(_ request: ServerRequest, name: String, kind: String) async throws -> ServerResponse {
        let answer = await router.receiveWebhook(
            channel: name, InboundWebhook(kind: kind, headers: request.headers, body: request.body))
        switch answer {
        case nil: throw APIError.notFound("no channel \(name)")
        case .accepted?: return HeraldAPI.json(200, ["ok": true])
        case .unauthorized?: throw APIError(401, "unauthorized", "the webhook's secret does not match")
        case .invalid(let reason)?: throw APIError(422, "invalid_update", reason)
        case .notFound?: throw APIError.notFound("channel \(name) takes no \(kind) webhook")
        }
    }
}

/// Ends a report's writer when the client is gone or stopped reading.
private struct ReportWriteStopped: Error {}
