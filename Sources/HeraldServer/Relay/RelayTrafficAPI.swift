import ChannelAPI
import Foundation
import Router

/// `GET /v1/relays` (docs/console.md, "Relay traffic"): what the console shows of the relays, read
/// from the store so it covers every `herald serve` on it. Per configured protocol, its routes, the
/// kept requests counted by status code, their pushes by outcome, and the newest requests (time,
/// route template, status, pushes, caller: never content). Scope `read` on a token that covers every
/// namespace (`*`): relay traffic belongs to no namespace.
struct RelayTrafficAPI: APIResource {
    /// Recent requests listed per protocol.
    static let recent = 20

    var routes: [APIRoute] {
        [
            APIRoute("GET", RoutePattern("/v1/relays"), access: .token(["read"])) { api, call in
                let token = try call.token
                guard token.namespaces.contains("*") else {
                    throw APIError.forbidden("token \(token.name) does not cover every namespace (*)")
                }
                let relays = api.settings.withLock { $0.relays }
                api.metrics.relays.history.flush(store: api.router.store, logger: api.router.logger)
                return HeraldAPI.json(200, try RelayTrafficAPI.traffic(relays, store: api.router.store))
            }
        ]
    }

    /// The answer: `{"relays":[{"protocol", "routes", "requests":{code: n}, "pushes":{outcome: n},
    /// "recent":[…]}], "kept": n}`, one entry per configured protocol and per protocol in the history.
    static func traffic(_ hub: RelayHub, store: any HeraldStore) throws -> JSONValue {
        let tallies = try store.relayRequestTallies()
        var names = hub.entries.map(\.settings.module.name)
        for t in tallies where !names.contains(t.relay) { names.append(t.relay) }
        let relays: [JSONValue] = try names.map { name in
            let routes = hub.entries.first { $0.settings.module.name == name }?.relay.routes ?? []
            var requests: [String: JSONValue] = [:]
            var pushes: [String: Int] = [:]
            for t in tallies where t.relay == name {
                requests[String(t.status)] = .number(Double(t.requests))
                for (k, v) in t.pushes { pushes[k, default: 0] += v }
            }
            let recent = try store.relayRequests(relay: name, limit: Self.recent).map(Self.json)
            return [
                "protocol": .string(name), "routes": .array(routes.map { .string($0.method + " " + $0.path) }),
                "requests": .object(requests), "pushes": .object(pushes.mapValues { .number(Double($0)) }),
                "recent": .array(recent),
            ]
        }
        return ["relays": .array(relays), "kept": .number(Double(RelayHistory.keep))]
    }

    /// One record as the console shows it.
    static func json(_ r: RelayRequestRecord) -> JSONValue {
        [
            "at": .string(ISO8601Time.string(r.at)), "route": .string(r.route), "status": .number(Double(r.status)),
            "pushes": .object(r.pushes.mapValues { .number(Double($0)) }), "caller": .string(r.caller),
        ]
    }
}
