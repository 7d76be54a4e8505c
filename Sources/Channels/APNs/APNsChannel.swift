import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldSync

/// `type: apns`: Apple Push Notification service over HTTP/2 with token (ES256 JWT) auth.
///
/// ```yaml
/// apns:
///   type: apns
///   key-p8: ~/.herald/AuthKey_ABC123DEFG.p8
///   key-id: ABC123DEFG
///   team-id: TEAM123456
///   topic: com.example.app
///   environment: production        # default for devices that report none
///   encryption: none               # none | hapi-v1
///   content: full                  # full | generic
/// ```
///
/// Each device goes to the host of its environment over one kept-open, multiplexed HTTP/2
/// connection of the shared client; a batch is sent with at most ``maxConcurrentRequests``
/// requests in flight. See `docs/channels/apns.md` for the outcome mapping.
public final class APNsChannel: Channel {
    /// The channel's settings.
    public let configuration: APNsConfiguration
    /// Requests in flight per batch.
    public static let maxConcurrentRequests = 100

    let builder: APNsPayloadBuilder
    let tokens: APNsTokenProvider
    let http: any HTTPTransport
    let clock: any HeraldClock
    let random: any RandomSource
    let logger: ChannelLogger
    /// Environments whose connection has had a request with a valid provider token accepted. Until
    /// then APNs allows one stream only, so the first request to a cold environment goes out alone.
    private let warm = Locked<Set<APNsEnvironment>>([])

    /// The factory registered under `apns`; serves `ios` devices. Reads the `.p8` key at config time.
    public static let factory = ChannelFactory(
        type: "apns", defaultPlatforms: ["ios"], platforms: [APNsPlatform.descriptor]
    ) {
        config, context throws(ConfigError) in
        guard let keyPath = try config.path("key-p8"), !keyPath.isEmpty else {
            throw config.error(at: "key-p8", "channel \(config.name): missing required key 'key-p8'")
        }
        let keyID = try config.requiredString("key-id")
        let teamID = try config.requiredString("team-id")
        let topic = try config.requiredString("topic")
        let environments = APNsEnvironment.allCases.map(\.rawValue)
        let environment = try config.choice("environment", environments).flatMap(APNsEnvironment.init) ?? .production
        let force = try config.choice("force-environment", environments).flatMap(APNsEnvironment.init)
        let encryption =
            try config.choice("encryption", APNsEncryption.allCases.map(\.rawValue)).flatMap(APNsEncryption.init)
            ?? .none
        let content =
            try config.choice("content", APNsContentMode.allCases.map(\.rawValue)).flatMap(APNsContentMode.init)
            ?? .full
        var endpoints: [APNsEnvironment: String] = [:]
        for (k, v) in try config.stringMap("endpoints", allowedKeys: Set(environments)) ?? [:] {
            guard v.hasPrefix("https://") || v.hasPrefix("http://"), let env = APNsEnvironment(rawValue: k) else {
                throw config.error(at: "endpoints", "endpoints.\(k) must be an http(s) URL")
            }
            endpoints[env] = v
        }
        // A dry run does not read the .p8 key.
        if config.offline { return DryRunChannel(name: config.name) }
        let key: P256PrivateKey
        do throws(KeyError) {
            key = try APNsChannel.loadKey(path: keyPath)
        } catch {
            throw config.error(at: "key-p8", error.message)
        }
        let configuration = APNsConfiguration(
            keyID: keyID, teamID: teamID, topic: topic, environment: environment, forceEnvironment: force,
            encryption: encryption, content: content, endpoints: endpoints)
        return APNsChannel(configuration: configuration, key: key, context: context)
    }

    /// Why a `.p8` key could not be loaded.
    public struct KeyError: Error, Sendable {
        /// A message naming the file.
        public let message: String
    }

    /// Reads and parses a `.p8` (PKCS#8 PEM, P-256) signing key.
    public static func loadKey(path: String) throws(KeyError) -> P256PrivateKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw KeyError(message: "key-p8: cannot read \(path)")
        }
        guard let pem = String(data: data, encoding: .utf8) else {
            throw KeyError(message: "key-p8: \(path) is not a PEM text file")
        }
        do {
            return try P256PrivateKey(pemRepresentation: pem)
        } catch {
            throw KeyError(message: "key-p8: \(path) is not an APNs .p8 key (PEM P-256 private key): \(error.message)")
        }
    }

    /// Creates a channel from parsed settings and a signing key.
    public init(configuration: APNsConfiguration, key: P256PrivateKey, context: ChannelContext) {
        self.configuration = configuration
        self.builder = APNsPayloadBuilder(
            topic: configuration.topic, content: configuration.content, encryption: configuration.encryption)
        self.http = context.http
        self.clock = context.clock
        self.random = context.random
        self.logger = context.logger
        self.tokens = APNsTokenProvider(
            key: key, keyID: configuration.keyID, teamID: configuration.teamID, context: context)
    }

    /// The provider token in use (a bearer credential), scrubbed from stored results.
    public var secrets: [String] { tokens.current.map { [$0] } ?? [] }

    // MARK: Registration

    /// With `encryption: hapi-v1` a device must carry a `pushKey`. The `ios` fields themselves (hex
    /// token, `environment`, the pushKey's format) are checked once, by ``APNsPlatform/descriptor``,
    /// before this is called.
    public func validateRegistration(_ device: Device) async throws(ValidationError) -> Device {
        if configuration.encryption == .hapiV1, device.string("pushKey") == nil {
            throw ValidationError(field: "pushKey", "required by encryption hapi-v1: base64 of exactly 32 bytes")
        }
        return device
    }

    // MARK: Delivery

    /// Sends one notification to every target; one result per target.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let prepared: APNsPreparedNotification
        do {
            prepared = try builder.prepare(request, now: clock.now())
        } catch {
            return request.targets.map { .failed($0, reason: error.reason) }
        }
        return await send(prepared, to: request.targets)
    }

    /// Sends a prepared notification to every target; one result per target.
    func send(_ prepared: APNsPreparedNotification, to targets: [DeliveryTarget]) async -> [DeliveryResult] {
        let token: APNsProviderToken
        do {
            token = try tokens.token()
        } catch {
            logger.error("cannot sign the APNs provider token", ["error": error.message])
            return targets.map { .failed($0, reason: "provider token: \(error.message)") }
        }

        // A cold environment gets one request alone first (APNs allows a single stream until a
        // valid provider token was accepted on the connection).
        var pilots: [Int] = []
        var seen: Set<APNsEnvironment> = warm.withLock { $0 }
        for (i, t) in targets.enumerated() {
            guard let d = t.device else { continue }
            let env = configuration.environment(for: d)
            if seen.insert(env).inserted { pilots.append(i) }
        }
        var results = [DeliveryResult?](repeating: nil, count: targets.count)
        var configErrors: [String: Int] = [:]
        let pilotSet = Set(pilots)
        let rest = targets.indices.filter { !pilotSet.contains($0) }
        for indices in [pilots, rest] {
            for (i, sent) in await sendAll(indices, targets, prepared, token) {
                results[i] = sent.result
                if sent.configError, let reason = sent.result.reason { configErrors[reason, default: 0] += 1 }
            }
        }
        let final = DeliveryBatch.complete(targets, results)
        reportConfigErrors(configErrors, final)
        return final
    }

    /// One target's result, and whether it is a rejection an operator must fix.
    struct Sent: Sendable {
        var result: DeliveryResult
        var configError = false
    }

    /// One target ready to send: its request parts, fixed across a provider-token renewal.
    private struct Outgoing {
        var index: Int
        var target: DeliveryTarget
        var device: Device
        var environment: APNsEnvironment
        var url: String
        var apnsID: String
        var body: [UInt8]
    }

    /// What one response means for its target.
    private enum Answer {
        case done(Sent)
        /// `ExpiredProviderToken`: renew the token and send again.
        case expired(status: Int?)
    }

    /// Sends to the targets at `indices` as one batch of the HTTP client (at most
    /// ``maxConcurrentRequests`` in flight), renewing the provider token once on `ExpiredProviderToken`.
    ///
    /// Requests are built and answers classified here, on the calling task; the event loop only drives
    /// the transfers.
    private func sendAll(
        _ indices: [Int], _ targets: [DeliveryTarget], _ prepared: APNsPreparedNotification,
        _ initial: APNsProviderToken
    ) async -> [(Int, Sent)] {
        var out: [(Int, Sent)] = []
        var pending: [Outgoing] = []
        out.reserveCapacity(indices.count)
        pending.reserveCapacity(indices.count)
        for i in indices {
            switch outgoing(i, targets[i], prepared) {
            case .success(let o): pending.append(o)
            case .failure(let failed): out.append((i, Sent(result: failed.result)))
            }
        }
        let sent = await CredentialRenewal.send(
            pending, with: initial,
            send: { batch, token in
                let requests = batch.map { o in
                    HTTPRequest(
                        method: "POST", url: o.url,
                        headers: prepared.headers(apnsID: o.apnsID, providerToken: token.jwt), body: o.body,
                        maxResponseBytes: 64 * 1024)
                }
                let responses = await http.send(all: requests, maxInFlight: APNsChannel.maxConcurrentRequests)
                var accepted: Set<APNsEnvironment> = []
                var answers: [(Outgoing, CredentialRenewal.Answer<(Int, Sent), Int?>)] = []
                answers.reserveCapacity(batch.count)
                for (o, response) in zip(batch, responses) {
                    if case .success(let r) = response, r.status != 403 { accepted.insert(o.environment) }
                    switch answer(o, response, prepared) {
                    case .done(let sent): answers.append((o, .done((o.index, sent))))
                    case .expired(let status): answers.append((o, .rejected(status)))
                    }
                }
                if !accepted.isEmpty { warm.withLock { $0.formUnion(accepted) } }
                return answers
            },
            renew: { token -> Result<APNsProviderToken, CryptoError> in
                do throws(CryptoError) {
                    return .success(try tokens.token(replacing: token.jwt))
                } catch {
                    return .failure(error)
                }
            },
            giveUp: { o, status, why in
                let failure =
                    switch why {
                    case .rejectedAgain: "ExpiredProviderToken (again after renewing)"
                    case .renewalFailed(let error): "ExpiredProviderToken; renewing failed: \(error.message)"
                    }
                return (o.index, Sent(result: .failed(o.target, status: status, reason: failure), configError: true))
            })
        out += sent
        return out
    }

    /// A target's failure before anything was sent.
    private struct NotSent: Error {
        var result: DeliveryResult
    }

    /// The request parts for one target, or why it cannot be sent.
    private func outgoing(_ index: Int, _ target: DeliveryTarget, _ prepared: APNsPreparedNotification) -> Result<
        Outgoing, NotSent
    > {
        guard let device = target.device else { return .failure(NotSent(result: .failed(target, reason: "no device"))) }
        guard let deviceToken = prepared.activityPushToken ?? device.token, !deviceToken.isEmpty else {
            return .failure(NotSent(result: .failed(target, reason: "device has no APNs token")))
        }
        let environment = configuration.environment(for: device)
        let body: [UInt8]
        do {
            body = try prepared.body(for: device, nonce: prepared.hapiPlaintext == nil ? [] : random.bytes(12))
        } catch {
            return .failure(NotSent(result: .failed(target, reason: error.reason)))
        }
        return .success(
            Outgoing(
                index: index, target: target, device: device, environment: environment,
                url: configuration.url(environment: environment, token: deviceToken),
                apnsID: APNsPayloadBuilder.apnsID(for: target.deliveryId), body: body))
    }

    /// Classifies one answer (or transport error) into the target's result.
    private func answer(
        _ o: Outgoing, _ response: Result<HTTPResponse, HTTPError>, _ prepared: APNsPreparedNotification
    ) -> Answer {
        let target = o.target
        let outcome: APNsResponseClass
        var status: Int?
        switch response {
        case .success(let response):
            status = response.status
            let after = RetryAfter.parse(response, now: clock.now())
            outcome = APNsResponseClassifier.classify(
                status: response.status, body: response.body, apnsID: response.header("apns-id"),
                retryAfter: after, activityToken: prepared.activityPushToken != nil)
        case .failure(let error):
            outcome = APNsResponseClassifier.classify(error: error)
        }
        switch outcome {
        case .delivered(let id):
            return .done(Sent(result: .delivered(target, status: status, providerMessageId: id ?? o.apnsID)))
        case .dead(let reason, let timestamp):
            logger.info("device token is dead", ["deviceId": o.device.deviceId, "reason": reason])
            var r = DeliveryResult.dead(target, status: status, reason: reason)
            r.providerMessageId = o.apnsID
            r.details["environment"] = o.environment.rawValue
            if let timestamp { r.details["timestamp"] = timestamp }
            return .done(Sent(result: r))
        case .expiredProviderToken:
            return .expired(status: status)
        case .failed(let reason, let configError):
            var r = DeliveryResult.failed(target, status: status, reason: reason)
            r.providerMessageId = o.apnsID
            return .done(Sent(result: r, configError: configError))
        case .retry(let reason, let after, let configError):
            return .done(
                Sent(
                    result: .retry(target, status: status, reason: reason, retryAfter: after), configError: configError)
            )
        }
    }

    /// Logs configuration-type rejections once per batch and reason, at error level, without tokens.
    private func reportConfigErrors(_ counts: [String: Int], _ results: [DeliveryResult]) {
        for (reason, n) in counts.sorted(by: { $0.key < $1.key }) {
            logger.error(
                "APNs rejected the channel's credentials or topic; check key-p8, key-id, team-id, topic and environment",
                ["reason": reason, "deliveries": String(n), "topic": configuration.topic])
        }
        let badTokens = results.filter { $0.outcome == .dead && $0.reason == "BadDeviceToken" }.count
        if badTokens > 1, badTokens == results.count {
            logger.warning(
                "every device in the batch got BadDeviceToken; check the devices' environment (sandbox vs production)",
                ["deliveries": String(badTokens)])
        }
    }
}
