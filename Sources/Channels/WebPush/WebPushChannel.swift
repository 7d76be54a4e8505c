import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldSync

/// `type: webpush`: RFC 8030 push with RFC 8291 (`aes128gcm`) encryption and RFC 8292 VAPID.
///
/// Serves platform `web` (devices carry the browser's `subscription`). Every message is encrypted
/// with a fresh ephemeral P-256 key and salt, padded to a 256-byte bucket by default, and signed
/// with the VAPID key the subscription was made with (`vapidKeyId`, recorded at registration).
/// Answers: 2xx → delivered; 404/410 → dead; 429/5xx/transport errors → retry; 400/401/403/413 and
/// other 4xx → failed, subscription kept. See `docs/channels/webpush.md`.
public struct WebPushChannel: Channel, VAPIDKeyProviding {
    /// The checked configuration.
    public let settings: WebPushSettings
    /// What the router lends the channel: HTTP, clock, randomness, logger and the state (VAPID keys).
    let context: ChannelContext
    let tokens = VAPIDTokenCache()
    let ringCache = RingCache()
    let subscriptions = SubscriptionCache()
    /// Most requests in flight per delivery batch.
    static let maxInFlight = 128

    /// The factory registered under `webpush`, serving platform `web`.
    public static let factory = ChannelFactory(
        type: "webpush", defaultPlatforms: ["web"], platforms: [WebPushPlatform.descriptor]
    ) {
        config, context throws(ConfigError) in
        WebPushChannel(settings: try WebPushSettings.parse(config), context: context)
    }

    /// Creates the channel. Does no I/O: the VAPID key pair is created on first use.
    public init(settings: WebPushSettings, context: ChannelContext) {
        self.settings = settings
        self.context = context
    }

    // MARK: VAPID keys

    /// The newest VAPID public key (base64url, 65-byte point) for `PushManager.subscribe`.
    public func applicationServerKey() throws -> String {
        try storedRing().newest.applicationServerKey
    }

    /// Adds a new newest VAPID key and returns its public key; older keys keep signing.
    public func rotateApplicationServerKey() throws -> String {
        let ring = try VAPIDKeyRing.rotate(in: context.state, now: context.clock.now().secondsSince1970)
        context.logger.info("VAPID key rotated", ["vapidKeyId": ring.newest.id, "keys": String(ring.keys.count)])
        return ring.newest.applicationServerKey
    }

    /// Every VAPID key, oldest first (ids and public keys only).
    public func vapidKeys() throws -> [(id: String, applicationServerKey: String, createdAt: Int64)] {
        try storedRing().keys.map {
            ($0.id, $0.applicationServerKey, $0.createdAt)
        }
    }

    /// The key ring in the channel state, created with one key on first use.
    func storedRing() throws(WebPushError) -> VAPIDKeyRing {
        try VAPIDKeyRing.loadOrCreate(from: context.state, now: context.clock.now().secondsSince1970)
    }

    /// The ring for a delivery batch: re-read from the state (another process may have rotated it),
    /// re-parsed only when the stored bytes changed.
    func currentRing() throws(WebPushError) -> VAPIDKeyRing {
        let stored: [UInt8]?
        do { stored = try context.state.value(forKey: VAPIDKeyRing.stateKey) } catch {
            throw WebPushError("cannot read the VAPID keys from the channel state: \(error)")
        }
        if let stored, let cached = ringCache.value.withLock({ $0 }), cached.bytes == stored { return cached.ring }
        let ring = try storedRing()
        ringCache.value.withLock { $0 = (stored ?? ring.encoded, ring) }
        return ring
    }

    // MARK: Registration

    /// Checks the subscription (endpoint policy, P-256 point, 16-byte auth), normalises its keys to
    /// base64url and records `vapidKeyId`: the newest key unless the registration names a known one.
    public func validateRegistration(_ device: Device) async throws(ValidationError) -> Device {
        let sub = try WebPushSubscription(device: device, allowHosts: settings.allowHosts)
        let ring: VAPIDKeyRing
        do {
            ring = try storedRing()
        } catch {
            context.logger.error("VAPID keys unusable; refusing web registrations", ["reason": error.message])
            throw ValidationError(field: "vapidKeyId", "the channel's VAPID keys are unusable: \(error.message)")
        }
        var out = device
        out.fields["subscription"] = sub.json
        switch device.fields["vapidKeyId"] {
        case nil, .null?:
            out.fields["vapidKeyId"] = .string(ring.newest.id)
        case .string(let id)?:
            guard ring.key(id: id) != nil else {
                throw ValidationError(field: "vapidKeyId", "unknown VAPID key id \(id)")
            }
        default:
            throw ValidationError(field: "vapidKeyId", "must be a string")
        }
        return out
    }

    // MARK: Delivery

    /// Encrypts and posts the notification to every target's push service.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let ring: VAPIDKeyRing
        do { ring = try currentRing() } catch {
            context.logger.error("VAPID keys unusable; not sending", ["reason": error.message])
            return request.targets.map { .failed($0, reason: error.message) }
        }
        let n = request.notification
        let base = WebPushPayload.Template(WebPushPayload.object(for: n, badge: request.effectiveBadge))
        var headers = [
            HTTPHeader("TTL", String(WebPushHeaders.ttl(n.ttl, fallback: settings.defaultTTL))),
            HTTPHeader("Urgency", WebPushHeaders.urgency(priority: n.priority, severity: n.severity)),
            HTTPHeader("Content-Encoding", "aes128gcm"), HTTPHeader("Content-Type", "application/octet-stream"),
        ]
        if let topic = WebPushHeaders.topic(for: n.collapseTag) { headers.append(HTTPHeader("Topic", topic)) }
        let common = headers
        // Encryption dominates each send. Chunks of targets are encrypted on the global executor and each
        // chunk is then sent as one HTTP batch, so one chunk's encryption overlaps the others' transfers
        // and the event loop only drives libcurl.
        let targets = request.targets
        let chunks = stride(from: 0, to: targets.count, by: WebPushChannel.chunkSize).map {
            $0..<min($0 + WebPushChannel.chunkSize, targets.count)
        }
        let sent = await ConcurrentMap.map(chunks, limit: max(1, WebPushChannel.maxInFlight / WebPushChannel.chunkSize))
        { range in
            await self.deliverChunk(Array(targets[range]), ring: ring, payload: base, headers: common)
        }
        return sent.flatMap { $0 }
    }

    /// Targets encrypted, then sent, together: a chunk is one HTTP batch.
    static let chunkSize = 32

    /// The request for one target, or the result that stops it before sending.
    func prepare(
        _ target: DeliveryTarget, ring: VAPIDKeyRing, payload: WebPushPayload.Template, headers: [HTTPHeader]
    ) -> Result<Prepared, PrepareStop> {
        guard let device = target.device else {
            return .failure(.init(.failed(target, reason: "no device to deliver to")))
        }
        let sub: WebPushSubscription
        do { sub = try subscriptions.subscription(for: device, allowHosts: settings.allowHosts) } catch {
            return .failure(.init(.failed(target, reason: "subscription refused: \(error.description)")))
        }
        let key: VAPIDKey
        if let id = device.string("vapidKeyId") {
            guard let k = ring.key(id: id) else {
                return .failure(
                    .init(
                        .failed(
                            target,
                            reason: "subscription was made with VAPID key \(id), which is not in the channel state")))
            }
            key = k
        } else {
            key = ring.keys[0]
        }
        guard let audience = sub.audience else {
            return .failure(.init(.failed(target, reason: "subscription endpoint has no origin")))
        }
        let plaintext = payload.bytes(deviceId: device.deviceId)
        guard let recordLength = settings.padding.recordLength(forPayload: plaintext.count) else {
            return .failure(
                .init(
                    .failed(
                        target,
                        reason: "payload of \(plaintext.count) bytes exceeds the Web Push limit of "
                            + "\(WebPushEncryptor.maxPlaintext) bytes (4096-byte encrypted body)")))
        }
        let body: [UInt8]
        let authorization: (authorization: String, token: String)
        do throws(WebPushError) {
            let ephemeral: P256PrivateKey
            do { ephemeral = try P256PrivateKey() } catch {
                throw WebPushError("cannot create an ephemeral key: \(error.message)")
            }
            body = try WebPushEncryptor.encrypt(
                plaintext, to: sub.key, ephemeralKey: ephemeral, salt: context.random.bytes(16),
                paddedLength: recordLength)
            do {
                authorization = try tokens.authorization(
                    audience: audience, key: key, subject: settings.subject, lifetime: settings.expiration,
                    now: context.clock.now())
            } catch { throw WebPushError("cannot sign the VAPID token: \(error.message)") }
        } catch {
            return .failure(.init(.failed(target, reason: error.message)))
        }
        var all = headers
        all.append(HTTPHeader("Authorization", authorization.authorization))
        let secrets = [
            sub.endpoint, authorization.token, Base64.urlEncode(sub.key.authSecret),
            Base64.urlEncode(sub.key.publicKey.x963Representation),
        ]
        return .success(
            (
                HTTPRequest(
                    method: "POST", url: sub.endpoint, headers: all, body: body, addressPolicy: sub.addressPolicy),
                audience, key, secrets
            ))
    }

    /// The last parsed key ring and the stored bytes it came from.
    final class RingCache: Sendable {
        let value = Locked<(bytes: [UInt8], ring: VAPIDKeyRing)?>(nil)
    }

    /// A result that ends a delivery before anything is sent.
    struct PrepareStop: Error {
        let result: DeliveryResult
        init(_ result: DeliveryResult) { self.result = result }
    }

    /// One prepared request and what its answer needs.
    typealias Prepared = (request: HTTPRequest, audience: String, key: VAPIDKey, secrets: [String])

    /// Encrypts and signs for every target of a chunk, sends the requests as one batch and classifies
    /// the answers; results keep the chunk's order.
    func deliverChunk(
        _ targets: [DeliveryTarget], ring: VAPIDKeyRing, payload: WebPushPayload.Template, headers: [HTTPHeader]
    ) async -> [DeliveryResult] {
        await DeliveryBatch.deliver(
            targets, over: context.http, maxInFlight: targets.count,
            prepare: { target in
                switch prepare(target, ring: ring, payload: payload, headers: headers) {
                case .success(let p): return .send(p.request, p)
                case .failure(let stop): return .result(stop.result)
                }
            },
            classify: { target, prepared, response in classify(target, prepared, response) })
    }

    /// Classifies one answer (or transport error) for its target.
    func classify(
        _ target: DeliveryTarget, _ prepared: Prepared, _ answered: Result<HTTPResponse, HTTPError>
    ) -> DeliveryResult {
        let log = context.logger.withSecrets(prepared.secrets)
        let deviceId = target.device?.deviceId ?? ""
        let response: HTTPResponse
        switch answered {
        case .success(let r): response = r
        case .failure(let error):
            let text = Redaction.scrub(error.description, secrets: prepared.secrets)
            if error.code == .invalidRequest { return .failed(target, reason: "request refused locally: \(text)") }
            // The endpoint resolved to an address device URLs may not reach: permanent, never retried.
            if error.code == .blockedAddress { return .failed(target, reason: text) }
            return .retry(target, reason: "transport: \(text)")
        }
        switch WebPushResponse.classify(
            status: response.status, body: response.body, retryAfter: response.header("retry-after"),
            now: context.clock.now())
        {
        case .delivered:
            return .delivered(target, status: response.status, providerMessageId: response.header("location"))
        case .dead(let reason):
            log.info(
                "subscription gone",
                ["deviceId": deviceId, "status": String(response.status), "origin": prepared.audience])
            return .dead(target, status: response.status, reason: reason)
        case .retry(let reason, let after):
            return .retry(target, status: response.status, reason: reason, retryAfter: after)
        case .failed(let reason, let isConfigProblem):
            if isConfigProblem {
                log.error(
                    "push service refused the request (VAPID key, subject or request format)",
                    [
                        "deviceId": deviceId, "status": String(response.status), "origin": prepared.audience,
                        "vapidKeyId": prepared.key.id, "reason": reason,
                    ])
            }
            return .failed(target, status: response.status, reason: reason)
        }
    }
}
