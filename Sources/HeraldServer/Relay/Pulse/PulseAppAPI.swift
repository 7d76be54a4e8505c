import ChannelAPI
import HeraldCrypto

/// The app's side of the Pulse relay, under `/v1/pulse/` (docs/pulse-relay.md). Registration
/// issues a per-device credential (`Authorization: Bearer <credential>` on every other call; only
/// its SHA-256 is stored). Bodies are JSON; answers are `{ok:true,…}` or `{ok:false, code, error}`.
struct PulseAppAPI {
    let config: PulseRelayConfig
    let state: PulseState
    let clock: any HeraldClock

    static let register = RelayRoute("POST", "/v1/pulse/devices", access: .own)
    static let update = RelayRoute("POST", "/v1/pulse/devices/{deviceId}", access: .own)
    static let delete = RelayRoute("DELETE", "/v1/pulse/devices/{deviceId}", access: .own)
    static let mint = RelayRoute("POST", "/v1/pulse/devices/{deviceId}/sites", access: .own)
    static let revoke = RelayRoute("DELETE", "/v1/pulse/devices/{deviceId}/sites/{sourceId}", access: .own)
    static let activity = RelayRoute(
        "POST", "/v1/pulse/devices/{deviceId}/sites/{sourceId}/activities/{ref}", access: .own)
    static let ended = RelayRoute(
        "DELETE", "/v1/pulse/devices/{deviceId}/sites/{sourceId}/activities/{ref}", access: .own)

    static let routes = [register, update, delete, mint, revoke, activity, ended]

    func handle(_ request: RelayRequest) -> RelayResponse {
        do throws(PulseRefusal) {
            if request.route == Self.register { return try registerPhone(request) }
            let deviceId = request["deviceId"]
            let phone = try authenticate(request, deviceId: deviceId)
            switch request.route {
            case Self.update: return try updatePhone(request, deviceId: deviceId)
            case Self.delete:
                try state.retire(deviceId)
                return RelayResponse(200, ["ok": true])
            case Self.mint: return try mintKey(request, deviceId: deviceId, phone: phone)
            case Self.revoke:
                let sourceId = request["sourceId"]
                if var key = try state.siteKey(deviceId, sourceId) {
                    key.revoked = true
                    key.sealedKey = nil
                    try state.save(key, deviceId, sourceId)
                }
                return RelayResponse(200, ["ok": true])
            default: return try reportActivity(request, deviceId: deviceId)
            }
        } catch {
            return error.response
        }
    }

    /// The phone of `deviceId` when the bearer credential is its own: 401 otherwise, 410 when gone.
    func authenticate(_ request: RelayRequest, deviceId: String) throws(PulseRefusal) -> PulsePhone {
        let unauthorized = PulseRefusal(401, "unauthorized", "send Authorization: Bearer <the device credential>")
        guard let header = request.header("authorization"), header.lowercased().hasPrefix("bearer ") else {
            throw unauthorized
        }
        let credential = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        guard let phone = try state.phone(deviceId),
            ConstantTime.equals(Array(PulseState.hash(credential).utf8), Array(phone.credentialHash.utf8))
        else { throw unauthorized }
        if phone.gone, request.route != Self.delete {
            throw PulseRefusal(410, "gone", "this phone was deleted; register again")
        }
        return phone
    }

    static func object(_ body: [UInt8]) throws(PulseRefusal) -> [String: JSONValue] {
        if body.isEmpty { return [:] }
        guard let o = (try? JSONValue.parse(body))?.objectValue else {
            throw .bad("the body must be a JSON object", code: "invalid_json")
        }
        return o
    }

    /// A hex APNs token (8–200 digits, even), lower-cased.
    static func token(_ v: JSONValue?, _ name: String) throws(PulseRefusal) -> String {
        guard let t = v?.stringValue, (8...200).contains(t.utf8.count), t.utf8.count % 2 == 0,
            t.utf8.allSatisfy(RelayHex.isDigit)
        else { throw .bad("\(name) must be an APNs token in hex") }
        return t.lowercased()
    }

    /// `token` and `environment` of a registration body.
    static func registration(_ o: [String: JSONValue]) throws(PulseRefusal) -> (String, String) {
        let token = try token(o["pushToStartToken"], "pushToStartToken")
        switch o["environment"] {
        case nil, .null?: return (token, "production")
        case .string(let e)? where e == "production" || e == "sandbox": return (token, e)
        default: throw .bad("environment must be production or sandbox")
        }
    }

    /// Random bytes as base64url.
    static func fresh(_ count: Int) -> String { Base64.urlEncode(SecureRandom.bytes(count)) }

    /// `POST /v1/pulse/devices` `{pushToStartToken, environment}` → 201 `{deviceId, credential}`.
    /// A phone that had the same push-to-start token is replaced (its keys get 410).
    func registerPhone(_ request: RelayRequest) throws(PulseRefusal) -> RelayResponse {
        let (token, environment) = try Self.registration(try Self.object(request.body))
        let deviceId = Hex.encode(SecureRandom.bytes(16))
        let credential = "pdc_" + Self.fresh(32)
        try state.save(
            PulsePhone(credentialHash: PulseState.hash(credential), token: token, environment: environment), deviceId)
        if let old = try state.claim(token: token, for: deviceId), old != deviceId { try state.retire(old) }
        return RelayResponse(201, ["ok": true, "deviceId": .string(deviceId), "credential": .string(credential)])
    }

    /// `POST /v1/pulse/devices/{deviceId}` `{pushToStartToken, environment}`: a new token for the
    /// same phone (its keys stay valid).
    func updatePhone(_ request: RelayRequest, deviceId: String) throws(PulseRefusal) -> RelayResponse {
        let (token, environment) = try Self.registration(try Self.object(request.body))
        _ = try state.updatePhone(deviceId) {
            $0.token = token
            $0.environment = environment
        }
        if let old = try state.claim(token: token, for: deviceId), old != deviceId { try state.retire(old) }
        return RelayResponse(200, ["ok": true, "deviceId": .string(deviceId)])
    }

    /// `POST /v1/pulse/devices/{deviceId}/sites` `{name}` → 201 `{deviceId, sourceId, pushKey}`: a
    /// fresh 32-byte key for one site on this phone (the app puts it in the `authorize` URL's fragment).
    func mintKey(_ request: RelayRequest, deviceId: String, phone: PulsePhone) throws(PulseRefusal) -> RelayResponse {
        let o = try Self.object(request.body)
        guard let name = o["name"]?.stringValue, !name.isEmpty, name.count <= 20 else {
            throw .bad("name must be the site's name from pulse-relay.json, 1-20 characters")
        }
        let sourceId = "s_" + Self.fresh(12)
        let pushKey = SecureRandom.bytes(32)
        guard let sealed = config.vault.seal(pushKey, deviceId: deviceId, sourceId: sourceId) else {
            throw PulseRefusal(500, "seal_failed", "the relay could not seal the key")
        }
        try state.save(PulseSiteKey(sealedKey: sealed, name: name), deviceId, sourceId)
        _ = try state.updatePhone(deviceId) { $0.sources.append(sourceId) }
        return RelayResponse(
            201,
            [
                "ok": true, "deviceId": .string(deviceId), "sourceId": .string(sourceId),
                "pushKey": .string(Base64.urlEncode(pushKey)),
            ])
    }

    /// `POST …/activities/{ref}` `{token}`: the activity's own push token; `DELETE …/activities/{ref}`:
    /// it ended or was dismissed (the site's next update gets 404).
    func reportActivity(_ request: RelayRequest, deviceId: String) throws(PulseRefusal) -> RelayResponse {
        let sourceId = request["sourceId"]
        let ref = request["ref"]
        guard PulseActivityBody.isValidRef(ref) else { throw .bad("ref must be 1-64 characters of A-Z a-z 0-9 . _ -") }
        guard let key = try state.siteKey(deviceId, sourceId), !key.revoked else {
            throw PulseRefusal(404, "no_site", "this phone has no such site")
        }
        var token: String?
        if request.route == Self.activity { token = try Self.token(try Self.object(request.body)["token"], "token") }
        let now = clock.now().millisecondsSince1970
        try state.ledger(deviceId, sourceId) { $0.report(token: token, ref: ref, now: now) }
        return RelayResponse(200, ["ok": true])
    }
}
