import ChannelAPI
import Foundation
import HeraldMHD
import HeraldServer
import Router
import Testing

/// Issue 30's cross-namespace matrix: every route that names a namespace or a notification, for
/// every ordered pair of tokens that cover disjoint namespaces. The attacker's request aimed at the
/// victim's namespace is refused (403), answered as if the target did not exist (404, 400 for an
/// unknown cursor), refused as a conflict (409), or, for a send of the victim's id, stored as the
/// attacker's own new notification (ids are unique per namespace) — and the victim's devices,
/// notifications and events are unchanged afterwards. RELIABILITY.md ("Attack: tenant isolation") lists the table.
@Suite struct CrossNamespaceMatrixTests {
    struct Tenant: Sendable {
        let name: String
        let token: String
        let namespace: String
        let scopes: Set<String>
    }

    static let all: Set<String> = ["send", "devices", "events", "read"]
    static let tenants = [
        Tenant(name: "alpha", token: "hrd_alpha", namespace: "alpha", scopes: all),
        Tenant(name: "beta", token: "hrd_beta", namespace: "beta", scopes: all),
        Tenant(name: "team", token: "hrd_team", namespace: "team-x", scopes: all),
        Tenant(name: "beta-sender", token: "hrd_beta_sender", namespace: "beta", scopes: ["send"]),
        Tenant(name: "alpha-reader", token: "hrd_alpha_reader", namespace: "alpha", scopes: ["read"]),
    ]

    /// One attack: the route, and the request aimed at `victim` by a token of `attacker`.
    struct Attack: Sendable {
        let route: String
        let make: @Sendable (_ attacker: Tenant, _ victim: Tenant) -> ServerRequest
    }

    static func request(
        _ method: String, _ path: String, _ attacker: Tenant, query: [String: String] = [:], json: String? = nil
    ) -> ServerRequest {
        var headers = ["authorization": "Bearer \(attacker.token)"]
        if json != nil { headers["content-type"] = "application/json" }
        return ServerRequest(method: method, path: path, query: query, headers: headers, body: Array((json ?? "").utf8))
    }

    /// Each victim has a phone `phone` with push token `push-<ns>` and a notification `note-<ns>`.
    static let attacks: [Attack] = [
        Attack(route: "POST /v1/devices (their namespace)") { a, v in
            request(
                "POST", "/v1/devices", a,
                json: #"{"namespace":"\#(v.namespace)","deviceId":"phone","platform":"phone","token":"mine"}"#)
        },
        Attack(route: "POST /v1/devices (their push token)") { a, v in
            request(
                "POST", "/v1/devices", a,
                json:
                    #"{"namespace":"\#(a.namespace)","deviceId":"stolen","platform":"phone","token":"push-\#(v.namespace)"}"#
            )
        },
        Attack(route: "GET /v1/devices") { a, v in request("GET", "/v1/devices", a, query: ["namespace": v.namespace])
        },
        Attack(route: "DELETE /v1/devices (their namespace)") { a, v in
            request("DELETE", "/v1/devices", a, query: ["namespace": v.namespace, "deviceId": "phone"])
        },
        Attack(route: "DELETE /v1/devices (their push token)") { a, v in
            request("DELETE", "/v1/devices", a, query: ["namespace": a.namespace, "token": "push-\(v.namespace)"])
        },
        Attack(route: "POST /v1/notifications (their namespace)") { a, v in
            request("POST", "/v1/notifications", a, json: #"{"namespace":"\#(v.namespace)","title":"x"}"#)
        },
        Attack(route: "GET /v1/notifications") { a, v in
            request("GET", "/v1/notifications", a, query: ["namespace": v.namespace])
        },
        Attack(route: "GET /v1/notifications?before= (their id)") { a, v in
            request("GET", "/v1/notifications", a, query: ["namespace": a.namespace, "before": "note-\(v.namespace)"])
        },
        Attack(route: "GET /v1/notifications/{id}") { a, v in request("GET", "/v1/notifications/note-\(v.namespace)", a)
        },
        Attack(route: "POST /v1/notifications/{id}/events") { a, v in
            request("POST", "/v1/notifications/note-\(v.namespace)/events", a, json: #"{"kind":"tapped"}"#)
        },
        Attack(route: "GET /v1/notifications/{id}/action") { a, v in
            request("GET", "/v1/notifications/note-\(v.namespace)/action", a, query: ["timeout": "0"])
        },
        Attack(route: "GET /v1/events") { a, v in request("GET", "/v1/events", a, query: ["namespace": v.namespace]) },
        Attack(route: "POST /v1/explain") { a, v in
            request("POST", "/v1/explain", a, json: #"{"namespace":"\#(v.namespace)","title":"x"}"#)
        },
        Attack(route: "GET /v1/summary") { a, _ in request("GET", "/v1/summary", a) },
        Attack(route: "POST /v1/notifications (their id)") { a, v in
            request(
                "POST", "/v1/notifications", a,
                json: #"{"id":"note-\#(v.namespace)","namespace":"\#(a.namespace)","title":"x"}"#)
        },
        Attack(route: "POST /v1/notifications?wait=none (their id)") { a, v in
            request(
                "POST", "/v1/notifications", a, query: ["wait": "none"],
                json: #"{"id":"note-\#(v.namespace)","namespace":"\#(a.namespace)","title":"x"}"#)
        },
    ]

    /// What the victim has, to compare before and after.
    static func snapshot(_ router: Router, _ v: Tenant) throws -> String {
        let devices = try router.devices(namespace: v.namespace).map { "\($0.deviceId)=\($0.token ?? "")" }
        let notes = try router.history(namespace: v.namespace, limit: 100).map { e in
            "\(e.notification.id):\(e.notification.title ?? ""):\(e.events.count)"
        }
        return "\(devices) \(notes)"
    }

    @Test func noTokenReachesANamespaceItDoesNotCover() async throws {
        var settings = ServerHarness.defaults
        settings.tokens = Self.tenants.map {
            ServerHarness.token($0.name, $0.token, [$0.namespace], $0.scopes)
        }
        var combinations = 0
        for attacker in Self.tenants {
            for victim in Self.tenants where victim.namespace != attacker.namespace && victim.scopes == Self.all {
                // A fresh store per pair: a send of the victim's id makes the attacker a notification
                // of its own with that id, which a later attack of the pair would then read.
                let (router, _, _) = try await ServerHarness.makeRouter()
                let api = HeraldAPI(router: router, server: settings)
                for v in Self.tenants where v.scopes == Self.all {
                    try await router.register(
                        Device(
                            namespace: v.namespace, deviceId: "phone", platform: "phone",
                            fields: ["token": .string("push-\(v.namespace)")]))
                    _ = try await router.send(
                        HeraldNotification(id: "note-\(v.namespace)", namespace: v.namespace, title: "secret-\(v.name)")
                    )
                }
                for attack in Self.attacks {
                    let before = try Self.snapshot(router, victim)
                    let response = await api.handle(attack.make(attacker, victim))
                    let isEventStream = response.header("Content-Type") == "text/event-stream"
                    let text = String(
                        decoding: await NamespaceIsolationTests.body(of: response, finishing: isEventStream),
                        as: UTF8.self)
                    let label =
                        "\(attack.route): \(attacker.name) → \(victim.name): \(response.status) \(text.prefix(300))"
                    if attack.route.hasPrefix("POST /v1/notifications") && attack.route.hasSuffix("(their id)")
                        && attacker.scopes.contains("send")
                    {
                        // Ids are unique per namespace: the send is the attacker's own new notification,
                        // answered as any new id is.
                        #expect([200, 202].contains(response.status), "\(label)")
                        #expect(text.contains("\"namespace\":\"\(attacker.namespace)\""), "\(label)")
                        #expect(!text.contains("\"replayed\""), "\(label)")
                    } else {
                        #expect(
                            [400, 403, 404, 409].contains(response.status) || attack.route == "GET /v1/summary",
                            "\(label)")
                    }
                    // Nothing of the victim is named in the answer.
                    #expect(!text.contains("secret-\(victim.name)"), "\(label)")
                    #expect(!text.contains("\"\(victim.namespace)\"") || response.status == 403, "\(label)")
                    #expect(!text.contains("push-\(victim.namespace)"), "\(label)")
                    #expect(try Self.snapshot(router, victim) == before, "\(label)")
                    combinations += 1
                }
                api.beginShutdown()
                await router.shutdown()
            }
        }
        // 5 attackers, 2 victims each (the full tenants of another namespace), 16 routes.
        #expect(combinations == 16 * 10)
    }
}
