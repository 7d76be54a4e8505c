import ChannelAPI
import Foundation
import HeraldConsole
import HeraldMHD
import Router

/// The operator console's routes (docs/console.md): the page at `/console`, and the two read
/// routes it needs beyond http-api.md §3, `GET /v1/summary` and `POST /v1/explain`.
extension HeraldAPI {
    /// The console's routes, or nil for any other path. Every file under `/console` shares one
    /// pattern (one metrics label).
    static func consoleRoute(_ path: String) -> Route? {
        if ConsoleAssets.handles(path: path) { return Route(pattern: "/console", methods: ["GET"], parameters: []) }
        switch path {
        case "/v1/summary": return Route(pattern: "/v1/summary", methods: ["GET"], parameters: [])
        case "/v1/explain": return Route(pattern: "/v1/explain", methods: ["POST"], parameters: [])
        default: return nil
        }
    }

    /// Answers a console route; nil for the other routes.
    func consoleResponse(_ request: ServerRequest, method: String, route: Route) async throws -> ServerResponse? {
        switch (method, route.pattern) {
        case ("GET", "/console"):
            // The files hold no data: no token (the page asks for one and sends it to the API).
            guard let page = ConsoleAssets.response(forPath: request.path) else { return nil }
            // A path under /console that is no file: the API's JSON 404, like every error (§6).
            guard page.status != 404 else { throw APIError.notFound("no console file \(request.path)") }
            return ServerResponse(
                status: page.status, headers: page.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                body: .bytes(request.method == "HEAD" ? [] : page.body))
        case ("GET", "/v1/summary"):
            let token = try authorize(request, scopes: ["read"], route: route)
            let summary = try ConsoleSummary.load(router: router, caller: .init(token: token), now: router.clock.now())
            return HeraldAPI.json(200, summary.json)
        case ("POST", "/v1/explain"):
            let token = try authorize(request, scopes: ["read"], route: route)
            let notification = try HeraldNotification(json: try HeraldAPI.jsonObject(request))
            // A plan lists the namespace's devices: only for namespaces the token covers.
            try requireCovers(token, notification.namespace)
            return HeraldAPI.json(200, try router.explain(notification).json)
        default:
            return nil
        }
    }
}
