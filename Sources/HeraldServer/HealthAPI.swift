import HeraldMHD
import Router

/// `GET /healthz` (no token; answered while the server stops) and `GET /metrics` (no token, or
/// scope `metrics` with `metrics: token`).
struct HealthAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute("GET", RoutePattern("/healthz"), access: .open, servedWhileStopping: true) { api, _ in
                api.healthz()
            },
            APIRoute("GET", RoutePattern("/metrics"), access: .token(["metrics"], openWhen: { $0.metricsPublic })) {
                api, _ in try api.renderMetrics()
            },
        ]
    }
}

extension HeraldAPI {
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
        let text =
            metrics.render(outboxPending: counts.pending + counts.retry, devicesByPlatform: platforms)
            + ServerMetrics.renderLocal(router.localStreams.stats)
        return ServerResponse(
            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
            body: .bytes(Array(text.utf8)))
    }
}
