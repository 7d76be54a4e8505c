import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldSync

/// The pure half of openchamber's signed relay protocol: signing inputs, signatures, bodies and
/// the response shape.
///
/// - Public key on the wire: `{kty, crv, x, y}`; serverId = RFC 7638 thumbprint (`JWK.thumbprint`).
/// - Signatures: ES256 (ECDSA P-256 over SHA-256), raw `r‖s`, base64url without padding.
/// - register-token signs `"<ts>.<token>.<platform>"`; send signs
///   `"<ts>.<tokens sorted by UTF-16 code unit, joined by ','>.<title>"`; `ts` is Unix milliseconds.
enum OpenChamberSigning {
    /// The most tokens in one send.
    static let batchSize = 100

    /// The string register-token signs.
    static func registerInput(ts: Int64, token: String, platform: String) -> String {
        OpenChamberSignedInput.register(ts: ts, token: token, platform: platform)
    }

    /// `tokens` sorted as JavaScript's default `Array.prototype.sort` does (by UTF-16 code unit).
    static func sortedForSigning(_ tokens: [String]) -> [String] { OpenChamberSignedInput.sortedForSigning(tokens) }

    /// The string send signs.
    static func sendInput(ts: Int64, tokens: [String], title: String) -> String {
        OpenChamberSignedInput.send(ts: ts, tokens: tokens, title: title)
    }

    /// base64url(raw r‖s) of the ES256 signature over `input`'s UTF-8 bytes.
    static func sign(_ input: String, key: P256PrivateKey) throws(CryptoError) -> String {
        Base64.urlEncode(try key.signature(for: Array(input.utf8)).rawRepresentation)
    }

    /// The public JWK as sent: `{kty, crv, x, y}`.
    static func publicJWK(_ key: P256PrivateKey) -> JSONValue {
        let jwk = key.publicKey.jwk
        return ["kty": .string(jwk.kty), "crv": .string(jwk.crv), "x": .string(jwk.x), "y": .string(jwk.y)]
    }

    /// The serverId: RFC 7638 thumbprint of the public key.
    static func serverId(_ key: P256PrivateKey) -> String { key.publicKey.jwk.thumbprint }

    /// The register-token body.
    static func registerBody(token: String, ts: Int64, key: P256PrivateKey) throws(CryptoError) -> [UInt8] {
        let sig = try sign(registerInput(ts: ts, token: token, platform: "ios"), key: key)
        let body: JSONValue = [
            "token": .string(token), "platform": "ios", "publicKeyJwk": publicJWK(key),
            "ts": .number(Double(ts)), "sig": .string(sig),
        ]
        return body.canonicalBytes
    }

    /// The send body for one batch (`env` is `production` or `sandbox`).
    static func sendBody(
        tokens: [String], notification: HeraldNotification, badge: Int?, env: String, ts: Int64,
        key: P256PrivateKey
    ) throws(CryptoError) -> [UInt8] {
        let title = GenericContent.title(for: notification.type)
        var o: [String: JSONValue] = [
            "tokens": .array(tokens.map { .string($0) }), "title": .string(title),
            "body": .string(GenericContent.body(for: notification)), "env": .string(env),
            "publicKeyJwk": publicJWK(key), "ts": .number(Double(ts)),
            "sig": .string(try sign(sendInput(ts: ts, tokens: tokens, title: title), key: key)),
        ]
        var data: [String: JSONValue] = [:]
        if let s = notification.data["sessionId"] { data["sessionId"] = .string(s) }
        o["data"] = .object(data)
        if let badge { o["badge"] = .number(Double(badge)) }
        if let c = notification.collapseTag { o["collapseId"] = .string(c) }
        return JSONValue.object(o).canonicalBytes
    }

    /// One token's result in the relay's answer.
    struct TokenResult: Equatable {
        var ok: Bool
        var drop: Bool
    }

    /// Parses `{"results":[{"token":…,"ok":bool,"drop":bool?}]}`; nil when the body has no such list.
    static func parseResults(_ body: [UInt8]) -> [String: TokenResult]? {
        guard let list = (try? JSONValue.parse(body))?["results"]?.arrayValue else { return nil }
        var out: [String: TokenResult] = [:]
        for item in list {
            guard let token = item["token"]?.stringValue else { continue }
            out[token] = TokenResult(ok: item["ok"]?.boolValue ?? false, drop: item["drop"]?.boolValue ?? false)
        }
        return out
    }

    /// The register URL: `url` with a trailing `/send` replaced by `/register-token` (appended otherwise).
    static func registerURL(_ url: String) -> String {
        url.hasSuffix("/send") ? String(url.dropLast(5)) + "/register-token" : url + "/register-token"
    }

    /// The `env` value for a device: `sandbox` or `production` (the default).
    static func environment(_ device: Device) -> String {
        device.string("environment") == "sandbox" ? "sandbox" : "production"
    }
}

/// `protocol: openchamber`: the sender. Keeps its P-256 key pair in the channel state store
/// (`openchamber.signing-key`, a private JWK), created on first use and never replaced silently.
final class OpenChamberRelay: Sendable {
    /// The state-store key holding the private JWK.
    static let stateKey = "openchamber.signing-key"
    let url: String
    let context: ChannelContext
    private let cached = Locked<P256PrivateKey?>(nil)

    init(url: String, context: ChannelContext) {
        self.url = url
        self.context = context
    }

    /// The key pair: the stored one, or a new one stored atomically on first use. A stored value that
    /// does not parse is an error; it is never overwritten.
    func signingKey() throws(RelayKeyError) -> P256PrivateKey {
        if let key = cached.withLock({ $0 }) { return key }
        let key: P256PrivateKey
        do {
            key = try context.state.update(Self.stateKey) { old throws -> ([UInt8]?, P256PrivateKey) in
                if let old {
                    guard let jwk = try? JSONDecoder().decode(JWK.self, from: Data(old)), jwk.d != nil,
                        let key = try? P256PrivateKey(jwk: jwk)
                    else {
                        throw RelayKeyError(
                            "the stored openchamber signing key (state key \(Self.stateKey)) is corrupt; refusing to "
                                + "replace it because relay serverId bindings depend on it. Restore it or delete the key "
                                + "deliberately to start over with a new serverId")
                    }
                    return (old, key)
                }
                let fresh = try P256PrivateKey()
                let encoded = try JSONEncoder().encode(fresh.jwk)
                return (Array(encoded), fresh)
            }
        } catch let e as RelayKeyError {
            throw e
        } catch {
            throw RelayKeyError("cannot load or create the openchamber signing key: \(error)")
        }
        cached.withLock { $0 = key }
        return key
    }

    /// The public JWK with its serverId, as canonical JSON `{crv, kty, serverId, x, y}`.
    func publicKeyJSON() throws(RelayKeyError) -> String {
        let key = try signingKey()
        var o = OpenChamberSigning.publicJWK(key).objectValue ?? [:]
        o["serverId"] = .string(OpenChamberSigning.serverId(key))
        return JSONValue.object(o).canonicalString
    }

    /// Registers the device token at the relay; failures are logged without the token.
    func register(_ device: Device) async {
        guard let token = device.token else { return }
        let log = context.logger.withSecrets([token])
        do {
            let key = try signingKey()
            let body = try OpenChamberSigning.registerBody(
                token: token, ts: context.clock.now().millisecondsSince1970, key: key)
            let response = try await context.http.send(
                HTTPRequest(
                    url: OpenChamberSigning.registerURL(url), headers: [HTTPHeader("content-type", "application/json")],
                    body: body))
            if !(200..<300).contains(response.status) {
                log.warning(
                    "openchamber register-token refused",
                    [
                        "device": device.deviceId,
                        "reason": RelaySupport.reason(status: response.status, body: response.body),
                    ])
            }
        } catch {
            log.warning("openchamber register-token failed", ["device": device.deviceId, "reason": "\(error)"])
        }
    }

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let key: P256PrivateKey
        do { key = try signingKey() } catch {
            context.logger.error(error.message)
            return request.targets.map { .failed($0, reason: error.message) }
        }
        var results: [DeliveryResult] = []
        var batches: [(env: String, targets: [DeliveryTarget])] = []
        var byEnv: [String: [DeliveryTarget]] = [:]
        for target in request.targets {
            guard let device = target.device, device.token?.isEmpty == false else {
                results.append(.failed(target, reason: "device has no token"))
                continue
            }
            byEnv[OpenChamberSigning.environment(device), default: []].append(target)
        }
        for env in byEnv.keys.sorted() {
            let targets = byEnv[env] ?? []
            var start = 0
            while start < targets.count {
                let end = min(start + OpenChamberSigning.batchSize, targets.count)
                batches.append((env, Array(targets[start..<end])))
                start = end
            }
        }
        let notification = request.notification
        let badge = request.effectiveBadge
        let sent = await ConcurrentMap.map(batches, limit: 8) { batch in
            await self.send(batch.targets, env: batch.env, notification: notification, badge: badge, key: key)
        }
        return results + sent.flatMap { $0 }
    }

    private func send(
        _ targets: [DeliveryTarget], env: String, notification: HeraldNotification, badge: Int?,
        key: P256PrivateKey
    ) async -> [DeliveryResult] {
        var byToken: [String: [DeliveryTarget]] = [:]
        var tokens: [String] = []
        for t in targets {
            guard let token = t.device?.token else { continue }
            if byToken[token] == nil { tokens.append(token) }
            byToken[token, default: []].append(t)
        }
        let body: [UInt8]
        do {
            body = try OpenChamberSigning.sendBody(
                tokens: tokens, notification: notification, badge: badge, env: env,
                ts: context.clock.now().millisecondsSince1970, key: key)
        } catch {
            return targets.map { .failed($0, reason: "cannot sign the openchamber request: \(error.message)") }
        }
        let response: HTTPResponse
        do {
            response = try await context.http.send(
                HTTPRequest(url: url, headers: [HTTPHeader("content-type", "application/json")], body: body))
        } catch {
            return targets.map { .retry($0, reason: RelaySupport.transportReason(error)) }
        }
        return OpenChamberSigning.classify(
            byToken: byToken, status: response.status, body: response.body,
            retryAfter: RetryAfter.parse(response, now: context.clock.now()))
    }
}

extension OpenChamberSigning {
    /// Maps a batch answer to one result per target (pure): non-2xx → retry for all; per token
    /// `drop:true` → dead, `ok:false` → retry, else delivered; a token missing from `results` → retry.
    static func classify(
        byToken: [String: [DeliveryTarget]], status: Int, body: [UInt8], retryAfter: Duration?
    ) -> [DeliveryResult] {
        let all = byToken.values.flatMap { $0 }
        guard (200..<300).contains(status) else {
            let reason = RelaySupport.reason(status: status, body: body)
            return all.map { .retry($0, status: status, reason: reason, retryAfter: retryAfter) }
        }
        let parsed = parseResults(body) ?? [:]
        var out: [DeliveryResult] = []
        for (token, targets) in byToken {
            for t in targets {
                switch parsed[token] {
                case nil:
                    out.append(.retry(t, status: status, reason: "relay did not report a result for this token"))
                case let r? where r.drop:
                    out.append(.dead(t, status: status, reason: "relay dropped the token (drop: true)"))
                case let r? where !r.ok:
                    out.append(.retry(t, status: status, reason: "relay reported ok: false"))
                default:
                    out.append(.delivered(t, status: status))
                }
            }
        }
        return out
    }
}
