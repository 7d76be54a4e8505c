import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto

/// `server.relays.openchamber`: the receiving end of openchamber's signed relay (`POST
/// /v1/push/register-token`, `POST /v1/push/send`; seed 002 steps 2-4). Every request is signed
/// with the calling server's P-256 key (ES256 over the signed input); the relay checks the signature
/// and `ts` (within `max-skew`), refuses a replayed `(serverId, ts, sig)`, binds a token to the first
/// serverId that registers it and delivers only to tokens bound to the caller. It stores only
/// `SHA-256(token) → serverId` bindings and a replay window, never content.
public struct OpenChamberRelayServer: InboundRelay {
    /// The module registered under `openchamber` (own keys: `max-skew`, `max-tokens`).
    public static let module = InboundRelayModule(name: "openchamber", keys: ["max-skew", "max-tokens"]) {
        config throws(ConfigError) in
        var relay = OpenChamberRelayServer()
        for (key, value) in config.ownKeys {
            switch key {
            case "max-skew":
                let d = try value.duration("server.relays.openchamber.max-skew")
                guard d >= .seconds(1), d <= .seconds(3600) else {
                    throw value.error("server.relays.openchamber.max-skew must be 1s to 1h")
                }
                relay.maxSkewMillis = d.components.seconds * 1000
            default:
                relay.maxTokens = try value.int("server.relays.openchamber.max-tokens")
                guard (1...1000).contains(relay.maxTokens) else {
                    throw value.error("server.relays.openchamber.max-tokens must be 1 to 1000")
                }
            }
        }
        return relay
    }

    /// How far `ts` may be from the relay's clock (the seed's ±5 minutes).
    var maxSkewMillis: Int64 = 5 * 60 * 1000
    /// The most tokens in one send.
    var maxTokens = 100

    static let registerRoute = RelayRoute("POST", "/v1/push/register-token")
    static let sendRoute = RelayRoute("POST", "/v1/push/send")

    /// `POST /v1/push/register-token` and `POST /v1/push/send`.
    public var routes: [RelayRoute] { [Self.registerRoute, Self.sendRoute] }

    /// Verifies, then registers or sends.
    public func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse {
        let state = OpenChamberRelayState(store: delivery.state("openchamber"), windowMillis: 2 * maxSkewMillis)
        let now = delivery.clock.now().millisecondsSince1970
        do throws(OpenChamberRelayRequest.Refusal) {
            if request.route == Self.registerRoute {
                let (signed, register) = try OpenChamberRelayRequest.register(
                    request.body, nowMillis: now, maxSkewMillis: maxSkewMillis)
                try state.bind(register.token, to: signed.serverId, request: signed, nowMillis: now)
                return RelayResponse(200, ["ok": true])
            }
            let (signed, send) = try OpenChamberRelayRequest.send(
                request.body, nowMillis: now, maxSkewMillis: maxSkewMillis, maxTokens: maxTokens)
            try state.requireBound(send.tokens, to: signed.serverId)
            try state.noteFresh(signed, nowMillis: now)
            return await deliver(send, delivery: delivery, state: state)
        } catch {
            return RelayResponse(error.status, RelayUpstream.body(error.code, error.reason))
        }
    }

    /// The APNs payload of a send: the generic alert, the badge, the sessionId (pure).
    static func payload(_ send: OpenChamberRelayRequest.Send) -> PreparedPush {
        var aps: [String: JSONValue] = [
            "alert": ["title": .string(send.title), "body": .string(send.body)], "sound": "default",
        ]
        if let badge = send.badge { aps["badge"] = .number(Double(badge)) }
        var top: [String: JSONValue] = ["aps": .object(aps)]
        if let s = send.sessionId { top["sessionId"] = .string(s) }
        return PreparedPush(priority: 10, expiration: 0, collapseID: send.collapseID, payload: .object(top))
    }

    /// Sends once per distinct token; answers `{results:[{token, ok, drop}]}`, dropping the binding
    /// of a dead token.
    func deliver(
        _ send: OpenChamberRelayRequest.Send, delivery: RelayDelivery, state: OpenChamberRelayState
    ) async -> RelayResponse {
        var tokens: [String] = []
        for t in send.tokens where !tokens.contains(t) { tokens.append(t) }
        let push = OpenChamberRelayServer.payload(send)
        guard let results = await delivery.send(push, to: tokens.map { RelayTarget(token: $0, environment: send.env) })
        else { return RelayUpstream.misconfigured(delivery.channelName) }
        var out: [JSONValue] = []
        for (token, r) in zip(tokens, results) {
            let drop = r.outcome == .dead
            if drop { state.unbind(token) }
            out.append(["token": .string(token), "ok": .bool(r.outcome == .delivered), "drop": .bool(drop)])
        }
        return RelayResponse(200, ["results": .array(out)])
    }
}

/// The openchamber relay's stored state: `bind:<hex SHA-256 of the token>` → serverId, and per
/// serverId the `(ts, sig)` pairs seen within the replay window. In the router's store, so every
/// `herald serve` on one database shares it.
struct OpenChamberRelayState {
    let store: any ChannelStateStore
    let windowMillis: Int64

    typealias Refusal = OpenChamberRelayRequest.Refusal

    static func bindingKey(_ token: String) -> String {
        "bind:" + Hex.encode(SHA256.hash(Array(token.lowercased().utf8)))
    }

    static let unavailable = Refusal(status: 503, code: "store_unavailable", reason: "the relay's store cannot serve")

    /// Binds `token` to `serverId` (first registration wins); refuses a replay or a token bound elsewhere.
    func bind(_ token: String, to serverId: String, request: OpenChamberRelayRequest, nowMillis: Int64) throws(Refusal)
    {
        let key = Self.bindingKey(token)
        let bound: String?
        do { bound = try store.value(forKey: key).map { String(decoding: $0, as: UTF8.self) } } catch {
            throw Self.unavailable
        }
        if let bound, bound != serverId { throw Self.boundElsewhere }
        try noteFresh(request, nowMillis: nowMillis)
        let won: Bool
        do {
            won = try store.update(key) { old -> (newValue: [UInt8]?, result: Bool) in
                if let old { return (old, String(decoding: old, as: UTF8.self) == serverId) }
                return (Array(serverId.utf8), true)
            }
        } catch { throw Self.unavailable }
        if !won { throw Self.boundElsewhere }
    }

    static let boundElsewhere = Refusal(
        status: 409, code: "token_bound_elsewhere", reason: "the token is bound to another server")

    /// Refuses a send naming any token not bound to `serverId` (nothing is sent).
    func requireBound(_ tokens: [String], to serverId: String) throws(Refusal) {
        for t in tokens {
            let bound: [UInt8]?
            do { bound = try store.value(forKey: Self.bindingKey(t)) } catch { throw Self.unavailable }
            guard let bound, String(decoding: bound, as: UTF8.self) == serverId else {
                throw Refusal(
                    status: 403, code: "token_not_bound",
                    reason: "a token is not bound to this server; register it first")
            }
        }
    }

    /// Forgets a dead token's binding (failures are left for the next registration).
    func unbind(_ token: String) { try? store.setValue(nil, forKey: Self.bindingKey(token)) }

    /// Records `(ts, sig)` for the serverId; refuses one seen within the window.
    func noteFresh(_ request: OpenChamberRelayRequest, nowMillis: Int64) throws(Refusal) {
        let entry = "\(request.ts).\(request.sig)"
        let fresh: Bool
        do {
            fresh = try store.update("seen:" + request.serverId) { old -> (newValue: [UInt8]?, result: Bool) in
                var seen = (old.flatMap { try? JSONValue.parse($0) }?.objectValue ?? [:]).filter {
                    ($0.value.numberValue ?? 0) >= Double(nowMillis - windowMillis)
                }
                if seen[entry] != nil { return (old, false) }
                seen[entry] = .number(Double(request.ts))
                return (JSONValue.object(seen).canonicalBytes, true)
            }
        } catch { throw Self.unavailable }
        guard fresh else {
            throw Refusal(status: 409, code: "replayed", reason: "this signed request was already used")
        }
    }
}
