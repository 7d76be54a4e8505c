import ChannelAPI
import ChannelSupport
import HeraldCrypto

/// `server.relays.hapi`: the receiving end of hapi's push relay (`POST /v1/push`, the protocol the
/// hapi hub documents "for self-hosted relays"). The body's end-to-end encrypted envelope goes to
/// APNs unchanged in exactly the payload Herald's direct `encryption: hapi-v1` path sends.
///
/// Answers: 200 `{ok:true}`; 410 `{ok:false,code:"unregistered"}` on `Unregistered` or
/// `BadDeviceToken`; 413 when the push would be over APNs' 4 KiB; 429 with `Retry-After` when APNs
/// throttles; 400 `{ok:false,code,error}` for bad input; 502/503 when APNs cannot be reached or is down.
public struct HapiRelayServer: InboundRelay {
    /// The module registered under `hapi`.
    public static let module = InboundRelayModule(name: "hapi") { config throws(ConfigError) in
        HapiRelayServer()
    }

    /// The largest APNs payload of an alert push.
    static let maxPayloadBytes = 4096

    /// `POST /v1/push`.
    public var routes: [RelayRoute] { [RelayRoute("POST", "/v1/push")] }

    /// A validated request.
    struct Push: Equatable {
        var token: String
        var envelope: String
        var collapseID: String?
        var priority: Int
    }

    /// Why a request is refused before anything is sent.
    struct Refusal: Error, Equatable {
        var status: Int
        var code: String
        var reason: String
    }

    /// Reads and checks a `/v1/push` body (pure).
    static func parse(_ body: [UInt8]) throws(Refusal) -> Push {
        func bad(_ code: String, _ reason: String) -> Refusal { Refusal(status: 400, code: code, reason: reason) }
        guard let value = try? JSONValue.parse(body), let o = value.objectValue else {
            throw bad("invalid_json", "the body must be a JSON object")
        }
        guard let platform = o["platform"] else { throw bad("invalid_request", "platform is required") }
        guard platform.stringValue == "ios" else {
            throw bad("unsupported_platform", "platform must be \"ios\"")
        }
        guard let token = o["token"]?.stringValue else { throw bad("invalid_token", "token must be a string") }
        guard (8...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
            token.utf8.allSatisfy({ RelayHex.isDigit($0) })
        else { throw bad("invalid_token", "token must be the device token in hex") }
        guard let envelope = o["envelope"]?.stringValue, !envelope.isEmpty else {
            throw bad("invalid_envelope", "envelope must be a base64 string")
        }
        guard envelope.utf8.count <= maxPayloadBytes else {
            throw Refusal(status: 413, code: "too_large", reason: "envelope is over APNs' \(maxPayloadBytes) bytes")
        }
        guard let sealed = try? Base64.decode(envelope), sealed.count >= 12 + 16 else {
            throw bad("invalid_envelope", "envelope must be base64 of nonce, ciphertext and tag")
        }
        var collapse: String?
        switch o["collapseId"] {
        case nil, .null?: break
        case .string(let c)?: collapse = c.isEmpty ? nil : c
        default: throw bad("invalid_request", "collapseId must be a string")
        }
        var priority = 10
        switch o["priority"] {
        case nil, .null?: break
        case let p? where p.intValue == 10 || p.intValue == 5: priority = p.intValue ?? 10
        default: throw bad("invalid_request", "priority must be 10 or 5")
        }
        return Push(token: token.lowercased(), envelope: envelope, collapseID: collapse, priority: priority)
    }

    /// The APNs push for a request: hapi-v1's payload, `apns-expiration: 0`.
    static func prepared(_ push: Push) throws(Refusal) -> PreparedPush {
        let payload = HapiPayload.apnsBody(envelope: push.envelope)
        guard payload.canonicalBytes.count <= maxPayloadBytes else {
            throw Refusal(
                status: 413, code: "too_large",
                reason: "the push would be \(payload.canonicalBytes.count) bytes, over APNs' \(maxPayloadBytes)")
        }
        return PreparedPush(priority: push.priority, expiration: 0, collapseID: push.collapseID, payload: payload)
    }

    /// The answer to one delivery result (pure).
    static func answer(_ result: DeliveryResult) -> RelayResponse {
        switch result.outcome {
        case .delivered, .suppressed: return RelayResponse(200, ["ok": true])
        case .dead: return RelayResponse(410, ["ok": false, "code": "unregistered"])
        case .retry: return RelayUpstream.transient(result)
        case .failed: return RelayUpstream.failed(result)
        }
    }

    /// Validates, sends once, answers with the upstream outcome.
    public func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse {
        let push: PreparedPush
        let token: String
        do {
            let parsed = try HapiRelayServer.parse(request.body)
            push = try HapiRelayServer.prepared(parsed)
            token = parsed.token
        } catch {
            return RelayResponse(
                error.status, ["ok": false, "code": .string(error.code), "error": .string(error.reason)])
        }
        guard let results = await delivery.send(push, to: [RelayTarget(token: token)]), let result = results.first
        else { return RelayUpstream.misconfigured(delivery.channelName) }
        return HapiRelayServer.answer(result)
    }
}
