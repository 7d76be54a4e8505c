import ChannelAPI
import ChannelSupport
import HeraldCrypto

/// A signed openchamber relay request, parsed and verified (pure): the signature over the signed
/// input under `publicKeyJwk`, `ts` within the allowed skew, and the caller's serverId (the RFC 7638
/// thumbprint of its key, as the openchamber client derives it).
struct OpenChamberRelayRequest: Equatable {
    /// register-token's fields.
    struct Register: Equatable {
        var token: String
        var platform: String
    }

    /// send's fields.
    struct Send: Equatable {
        var tokens: [String]
        var title: String
        var body: String
        var badge: Int?
        var collapseID: String?
        var env: String
        var sessionId: String?
    }

    /// The caller's serverId.
    var serverId: String
    /// `ts` (Unix milliseconds).
    var ts: Int64
    /// The signature as sent (base64url), for the replay window.
    var sig: String

    /// Why a request is refused: nothing is sent or stored.
    struct Refusal: Error, Equatable {
        var status: Int
        var code: String
        var reason: String

        static func bad(_ code: String, _ reason: String) -> Refusal {
            Refusal(status: 400, code: code, reason: reason)
        }
    }

    /// The body as an object.
    static func object(_ body: [UInt8]) throws(Refusal) -> [String: JSONValue] {
        guard let value = try? JSONValue.parse(body), let o = value.objectValue else {
            throw .bad("invalid_json", "the body must be a JSON object")
        }
        return o
    }

    /// A hex APNs device token.
    static func token(_ value: JSONValue?, _ what: String) throws(Refusal) -> String {
        guard let t = value?.stringValue else { throw .bad("invalid_token", "\(what) must be a string") }
        guard (8...200).contains(t.utf8.count), t.utf8.allSatisfy({ RelayHex.isDigit($0) }) else {
            throw .bad("invalid_token", "\(what) must be an APNs device token in hex")
        }
        return t
    }

    /// Reads a register-token body and verifies it at `nowMillis`.
    static func register(
        _ body: [UInt8], nowMillis: Int64, maxSkewMillis: Int64
    ) throws(Refusal) -> (OpenChamberRelayRequest, Register) {
        let o = try object(body)
        let token = try token(o["token"], "token")
        guard let platform = o["platform"]?.stringValue else {
            throw .bad("invalid_request", "platform must be a string")
        }
        guard platform == "ios" else { throw .bad("unsupported_platform", "platform must be \"ios\"") }
        let signed = try verify(
            o, nowMillis: nowMillis, maxSkewMillis: maxSkewMillis
        ) { ts in OpenChamberSignedInput.register(ts: ts, token: token, platform: platform) }
        return (signed, Register(token: token, platform: platform))
    }

    /// Reads a send body (at most `maxTokens` tokens) and verifies it at `nowMillis`.
    static func send(
        _ body: [UInt8], nowMillis: Int64, maxSkewMillis: Int64, maxTokens: Int
    ) throws(Refusal) -> (OpenChamberRelayRequest, Send) {
        let o = try object(body)
        guard let list = o["tokens"]?.arrayValue, !list.isEmpty else {
            throw .bad("invalid_request", "tokens must be a non-empty list")
        }
        guard list.count <= maxTokens else { throw .bad("too_many_tokens", "at most \(maxTokens) tokens per send") }
        var tokens: [String] = []
        for item in list { tokens.append(try token(item, "every token")) }
        guard let title = o["title"]?.stringValue else { throw .bad("invalid_request", "title must be a string") }
        guard let text = o["body"]?.stringValue else { throw .bad("invalid_request", "body must be a string") }
        var send = Send(tokens: tokens, title: title, body: text, env: "production")
        switch o["badge"] {
        case nil, .null?: break
        case let b? where b.intValue.map({ $0 >= 0 }) == true: send.badge = b.intValue
        default: throw .bad("invalid_request", "badge must be a whole number of at least 0")
        }
        switch o["collapseId"] {
        case nil, .null?: break
        case .string(let c)?: send.collapseID = c.isEmpty ? nil : c
        default: throw .bad("invalid_request", "collapseId must be a string")
        }
        switch o["env"] {
        case nil, .null?: break
        case .string(let e)? where e == "production" || e == "sandbox": send.env = e
        default: throw .bad("invalid_request", "env must be production or sandbox")
        }
        switch o["data"] {
        case nil, .null?: break
        case .object(let d)?:
            switch d["sessionId"] {
            case nil, .null?: break
            case .string(let s)?: send.sessionId = s
            default: throw .bad("invalid_request", "data.sessionId must be a string")
            }
        default: throw .bad("invalid_request", "data must be an object")
        }
        let signed = try verify(o, nowMillis: nowMillis, maxSkewMillis: maxSkewMillis) { ts in
            OpenChamberSignedInput.send(ts: ts, tokens: tokens, title: title)
        }
        return (signed, send)
    }

    /// Checks `ts` freshness, the key and the signature over `input(ts)`.
    static func verify(
        _ o: [String: JSONValue], nowMillis: Int64, maxSkewMillis: Int64, input: (Int64) -> String
    ) throws(Refusal) -> OpenChamberRelayRequest {
        guard let number = o["ts"]?.numberValue, number.rounded() == number, abs(number) < 9e15 else {
            throw .bad("invalid_request", "ts must be Unix milliseconds")
        }
        let ts = Int64(number)
        guard abs(nowMillis - ts) <= maxSkewMillis else {
            throw Refusal(status: 401, code: "stale", reason: "ts is outside the allowed clock skew")
        }
        guard let jwkObject = o["publicKeyJwk"]?.objectValue, let kty = jwkObject["kty"]?.stringValue,
            let crv = jwkObject["crv"]?.stringValue, let x = jwkObject["x"]?.stringValue,
            let y = jwkObject["y"]?.stringValue
        else { throw .bad("invalid_key", "publicKeyJwk must be {kty, crv, x, y}") }
        let jwk = JWK(kty: kty, crv: crv, x: x, y: y)
        let key: P256PublicKey
        do { key = try P256PublicKey(jwk: jwk) } catch { throw .bad("invalid_key", "publicKeyJwk is not a P-256 key") }
        guard let sig = o["sig"]?.stringValue else { throw .bad("invalid_signature", "sig must be a string") }
        let signature: ECDSASignature
        do {
            signature = try ECDSASignature(rawRepresentation: try Base64.urlDecode(sig))
        } catch {
            throw .bad("invalid_signature", "sig must be base64url of the 64-byte r‖s signature")
        }
        guard key.isValidSignature(signature, for: Array(input(ts).utf8)) else {
            throw Refusal(status: 401, code: "bad_signature", reason: "the signature does not verify")
        }
        return OpenChamberRelayRequest(serverId: jwk.thumbprint, ts: ts, sig: sig)
    }
}
