import ChannelAPI
import ChannelSupport
import HeraldCrypto

/// `server.relays.pulse`: a Pulse Relay (docs/pulse-relay.md). Websites push Live Activities to
/// `POST /v1/devices/{deviceId}/push`, signed with the pushKey the phone's app minted for them
/// (section 三 of the Pulse guide); the app manages its phone, site keys and activities under
/// `/v1/pulse/…` with the credential issued at registration. Herald verifies, enforces the revision
/// order and the guide's limits in the store (shared by every `herald serve` on one database) and
/// delivers through its `apns` channel.
public struct PulseRelayServer: InboundRelay {
    /// The module registered under `pulse`.
    public static let module = InboundRelayModule(name: "pulse", keys: PulseRelayConfig.keys) {
        config throws(ConfigError) in
        try PulseRelayServer(config: PulseRelayConfig.read(config))
    }

    let config: PulseRelayConfig

    init(config: PulseRelayConfig) { self.config = config }

    static let pushRoute = RelayRoute("POST", "/v1/devices/{deviceId}/push", access: .own)

    /// The site route and the app's routes.
    public var routes: [RelayRoute] { [Self.pushRoute] + PulseAppAPI.routes }

    /// Answers a site's push or an app request.
    public func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse {
        let state = PulseState(store: delivery.state("pulse"))
        if request.route != Self.pushRoute {
            return PulseAppAPI(config: config, state: state, clock: delivery.clock).handle(request)
        }
        do throws(PulseRefusal) {
            return try await push(request, delivery: delivery, state: state)
        } catch {
            return error.response
        }
    }

    /// A verified push, through the ledger, to APNs. The phone, the site key and the ledger are read,
    /// checked and reserved in one store transaction (``PulseState/ledger(_:_:checking:)``).
    func push(_ request: RelayRequest, delivery: RelayDelivery, state: PulseState) async throws(PulseRefusal)
        -> RelayResponse
    {
        let site = try precheck(request, now: delivery.clock.now().secondsSince1970)
        // Parsed before the transaction, answered after the signature: a bad signature is a 401 even
        // when its body is not valid.
        let parsed = Result { () throws(PulseRefusal) in try PulseActivityBody.parse(request.body) }
        let deviceId = request["deviceId"]
        let now = delivery.clock.now().millisecondsSince1970
        let (decision, body, key, phone) = try state.ledger(deviceId, site.sourceId) {
            phone, key, ledger throws(PulseRefusal) in
            let (key, phone) = try authorize(site, request, phone: phone, key: key)
            let body = try parsed.get()
            return (ledger.reserve(body, request: site, now: now, limits: config.limits), body, key, phone)
        }
        guard case .send(let activityToken, let dropAlert, let previous) = decision else {
            if case .refused(let refusal) = decision { throw refusal }
            throw PulseState.unavailable
        }
        func undo() {
            _ = try? state.ledger(deviceId, site.sourceId) {
                $0.record(.undo(revision: body.revision, previous: previous), ref: body.ref, now: now)
            }
        }
        let push: PreparedPush
        do throws(PulseRefusal) {
            push = try PulseLiveActivityPush.make(
                body, site: key.name, attributesType: config.attributesType, dropAlert: dropAlert, now: now / 1000)
        } catch {
            undo()
            throw error
        }
        let token = activityToken ?? phone.token
        guard let results = await delivery.send(push, to: [RelayTarget(token: token, environment: phone.environment)]),
            let result = results.first
        else {
            undo()
            return RelayUpstream.misconfigured(delivery.channelName)
        }
        return try answer(
            result, body: body, dropAlert: dropAlert, deviceId: deviceId, sourceId: site.sourceId, state: state,
            now: now, undo: undo)
    }

    /// The site's answer for APNs' outcome, recording what it changes.
    func answer(
        _ result: DeliveryResult, body: PulseActivityBody, dropAlert: Bool, deviceId: String, sourceId: String,
        state: PulseState, now: Int64, undo: () -> Void
    ) throws(PulseRefusal) -> RelayResponse {
        switch result.outcome {
        case .delivered, .suppressed:
            if body.event != "update" {
                _ = try? state.ledger(deviceId, sourceId) {
                    $0.record(body.event == "start" ? .started : .ended, ref: body.ref, now: now)
                }
            }
            return RelayResponse(200, dropAlert ? ["ok": true, "alertDropped": true] : ["ok": true])
        case .dead where body.event == "start":
            try? state.retire(deviceId)
            throw PulseRefusal(410, "gone", "APNs no longer knows this phone's push-to-start token; delete the key")
        case .dead:
            undo()  // nothing showed it: a start may follow with the same revision
            _ = try? state.ledger(deviceId, sourceId) { $0.record(.ended, ref: body.ref, now: now) }
            throw PulseRefusal(404, "no_activity", "the Live Activity for ref \(body.ref) is gone from the phone")
        case .retry:
            undo()
            return RelayUpstream.transient(result)
        case .failed:
            undo()
            let r = RelayUpstream.failed(result)
            // The guide's table has no 413: a payload APNs finds too large is the site's bad body.
            return r.status == 413 ? RelayResponse(400, r.body) : r
        }
    }

    /// What needs no store: the body's size, the site's headers and their freshness.
    func precheck(_ request: RelayRequest, now: Int64) throws(PulseRefusal) -> PulseSiteRequest {
        guard request.body.count <= config.maxBody else {
            throw .bad("the body is over \(config.maxBody) bytes", code: "too_large")
        }
        let site = try PulseSiteRequest.parse(
            source: request.header("x-pulse-source"), auth: request.header("x-pulse-auth"))
        try site.checkFresh(now: now, maxSkew: config.limits.maxSkew)
        return site
    }

    /// The phone's and the site key's records against the signature: the key record and the phone
    /// when the site may push, else the refusal (401 unknown, 410 gone, 403 revoked).
    func authorize(_ site: PulseSiteRequest, _ request: RelayRequest, phone: PulsePhone?, key: PulseSiteKey?)
        throws(PulseRefusal) -> (PulseSiteKey, PulsePhone)
    {
        let deviceId = request["deviceId"]
        guard let phone else { throw PulseRefusal(401, "unauthorized", "unknown device or key") }
        if phone.gone { throw PulseRefusal(410, "gone", "this phone is no longer available; delete the key") }
        guard let key else { throw PulseRefusal(401, "unauthorized", "unknown device or key") }
        if key.revoked { throw PulseRefusal(403, "revoked", "the user disconnected this site; delete the key") }
        guard let sealed = key.sealedKey else { throw PulseRefusal(401, "unauthorized", "unknown device or key") }
        guard let pushKey = config.vault.open(sealed, deviceId: deviceId, sourceId: site.sourceId) else {
            // Sealed under another key-file: the operator's fix, not the site's (a 401 would delete its key).
            throw PulseRefusal(500, "key_unreadable", "the relay cannot open this site's key (key-file changed?)")
        }
        try site.verify(key: pushKey, path: request.path, body: request.body)
        return (key, phone)
    }
}
