import ChannelAPI
import Foundation
import HeraldConsole
import HeraldMHD
import Router

/// The operator console's routes (docs/console.md): the page at `/console` (every file under it
/// shares one pattern, one metrics label), and the two read routes it needs beyond http-api.md §3,
/// `GET /v1/summary` and `POST /v1/explain`.
struct ConsoleAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", .test(label: "/console") { path, _ in ConsoleAssets.handles(path: path) ? "/console" : nil },
                access: .open
            ) { _, call in try ConsoleAPI.file(call.request) },
            APIRoute("GET", RoutePattern("/v1/summary"), access: .token(["read"])) { api, call in
                let summary = try ConsoleSummary.load(
                    router: api.router, caller: .init(token: try call.token), now: api.router.clock.now())
                return HeraldAPI.json(200, summary.json)
            },
            APIRoute("POST", RoutePattern("/v1/explain"), access: .token(["read"])) { api, call in
                let notification = try HeraldNotification(json: try HeraldAPI.jsonObject(call.request))
                // A plan lists the namespace's devices: only for namespaces the token covers.
                try api.requireCovers(try call.token, notification.namespace)
                return HeraldAPI.json(200, try api.router.explain(notification).json)
            },
        ]
    }

    /// A console file. The files hold no data: no token (the page asks for one and sends it to the
    /// API).
    static func file(_ request: ServerRequest) throws -> ServerResponse {
        guard let page = ConsoleAssets.response(forPath: request.path) else {
            throw APIError.notFound("no route \(request.method) \(request.path)")
        }
        // A path under /console that is no file: the API's JSON 404, like every error (§6).
        guard page.status != 404 else { throw APIError.notFound("no console file \(request.path)") }
        return ServerResponse(
            status: page.status, headers: page.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
            body: .bytes(request.method == "HEAD" ? [] : page.body))
    }
}
