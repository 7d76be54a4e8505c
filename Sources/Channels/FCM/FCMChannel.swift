import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto

/// `type: fcm`: Firebase Cloud Messaging HTTP v1 for `phone` and `wear` devices.
///
/// ```yaml
/// fcm:
///   type: fcm
///   service-account: ~/.herald/service-account.json   # project_id and token_uri come from the file
///   endpoint: https://fcm.googleapis.com                # default
///   display: data                                       # data (default) | notification
///   encryption: none                                    # none (default) | hapi-v1
/// ```
///
/// One request per device, up to 100 in flight, multiplexed over HTTP/2 by the shared client.
/// The OAuth access token is cached per service account (in memory and in the channel state) until
/// 60 s before it expires; a 401 from FCM refreshes it once and retries that device once.
/// See `docs/channels/fcm.md` for the outcome mapping.
public struct FCMChannel: Channel {
    /// The most requests in flight at once.
    public static let maximumInFlight = 100

    /// The service account.
    public let account: FCMServiceAccount
    /// The FCM base URL.
    public let endpoint: String
    /// The payload builder (display and encryption modes).
    public let builder: FCMMessageBuilder
    /// The access-token cache.
    public let tokens: FCMTokenProvider
    let http: any HTTPTransport
    let clock: any HeraldClock
    let random: any RandomSource
    let logger: ChannelLogger

    /// The factory registered under `fcm`, serving `phone` and `wear`.
    public static let factory = ChannelFactory(
        type: "fcm", defaultPlatforms: ["phone", "wear"], platforms: FCMPlatforms.all
    ) {
        config, context throws(ConfigError) in
        guard let path = try config.path("service-account"), !path.isEmpty else {
            throw config.error(at: "service-account", "channel \(config.name): missing required key 'service-account'")
        }
        let endpoint = try config.string("endpoint") ?? "https://fcm.googleapis.com"
        guard endpoint.hasPrefix("https://") || endpoint.hasPrefix("http://") || config.isUnresolved("endpoint") else {
            throw config.error(at: "endpoint", "endpoint must be an http(s) URL")
        }
        let display = FCMDisplay(rawValue: try config.choice("display", FCMDisplay.allCases.map(\.rawValue)) ?? "data")
        let encryption = FCMEncryption(
            rawValue: try config.choice("encryption", FCMEncryption.allCases.map(\.rawValue)) ?? "none")
        // A dry run does not read the service-account file.
        if config.offline { return DryRunChannel(name: config.name) }
        let account: FCMServiceAccount
        do throws(FCMServiceAccountError) {
            account = try FCMServiceAccount.load(path: path)
        } catch {
            throw config.error(at: "service-account", error.description)
        }
        return FCMChannel(
            account: account, endpoint: endpoint, display: display ?? .data, encryption: encryption ?? .none,
            context: context)
    }

    /// Creates a channel (the factory reads these from YAML).
    public init(
        account: FCMServiceAccount, endpoint: String = "https://fcm.googleapis.com", display: FCMDisplay = .data,
        encryption: FCMEncryption = .none, context: ChannelContext
    ) {
        self.account = account
        self.endpoint = endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        self.builder = FCMMessageBuilder(display: display, encryption: encryption)
        self.http = context.http
        self.clock = context.clock
        self.random = context.random
        self.logger = context.logger.withSecrets([account.privateKeyPEM])
        self.tokens = FCMTokenProvider(account: account, context: context)
    }

    /// The service account's private key (whole and line by line) and the access token in use (read
    /// from the shared state), scrubbed from stored results.
    public var secrets: [String] {
        let token = (try? tokens.context.state.json(forKey: account.cacheKey)).flatMap(FCMAccessToken.init(stateJSON:))
        return Redaction.pemSecrets(account.privateKeyPEM) + (token.map { [$0.value] } ?? [])
    }

    /// `{endpoint}/v1/projects/{project}/messages:send`.
    public var sendURL: String { "\(endpoint)/v1/projects/\(account.projectId)/messages:send" }

    /// Sends the notification to every target, up to ``maximumInFlight`` at once.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let targets = request.targets
        let prepared: FCMMessageBuilder.Prepared
        do {
            prepared = try builder.prepare(request.notification)
        } catch {
            return targets.map { .failed($0, reason: error.message) }
        }
        for w in prepared.warnings { logger.warning(w, ["notification": request.notification.id]) }
        // Build every body first: what FCM would refuse (too large, bad pushKey) fails without a request.
        var results: [DeliveryResult] = []
        var ready: [(DeliveryTarget, [UInt8])] = []
        ready.reserveCapacity(targets.count)
        for target in targets {
            switch body(for: target, prepared) {
            case .success(let b): ready.append((target, b))
            case .failure(let r): results.append(r)
            }
        }
        guard !ready.isEmpty else { return results }
        let token: FCMAccessToken
        switch await tokens.token() {
        case .success(let t): token = t
        case .failure(let e): return results + ready.map { FCMChannel.result(for: e, $0.0) }
        }
        return results + (await send(ready, token: token))
    }

    /// A request body, or the result that replaces sending it.
    public enum Built: Sendable {
        /// The JSON body to post.
        case success([UInt8])
        /// The result to report instead (the payload was refused locally).
        case failure(DeliveryResult)
    }

    /// The request body for one target, or the `failed` result saying why there is none.
    public func body(for target: DeliveryTarget, _ prepared: FCMMessageBuilder.Prepared) -> Built {
        guard let device = target.device, let deviceToken = device.token, !deviceToken.isEmpty else {
            return .failure(DeliveryResult.failed(target, reason: "device has no FCM token"))
        }
        var pushKey: [UInt8]?
        if builder.encryption == .hapiV1, let s = device.string("pushKey") {
            guard let key = try? Base64.decode(s), key.count == 32 else {
                return .failure(DeliveryResult.failed(target, reason: "pushKey is not base64 of exactly 32 bytes"))
            }
            pushKey = key
        }
        do throws(FCMPayloadError) {
            if pushKey == nil {
                return .success(
                    try builder.plainBody(
                        prepared, token: deviceToken, platform: device.platform, deliveryId: target.deliveryId))
            }
            return .success(
                try builder.body(
                    prepared, token: deviceToken, platform: device.platform, deliveryId: target.deliveryId,
                    pushKey: pushKey, nonce: pushKey == nil ? [] : random.bytes(12)
                ).canonicalBytes)
        } catch {
            return .failure(DeliveryResult.failed(target, reason: error.message))
        }
    }

    /// What one answer means: a result, or a 401 that calls for a fresh access token.
    private enum Answer {
        case result(DeliveryResult)
        case unauthenticated(status: Int, reason: String)
    }

    /// Posts every body as one batch of the HTTP client (at most ``maximumInFlight`` in flight) and
    /// classifies the answers; the devices answered 401 are sent once more with a refreshed token.
    ///
    /// Requests are built and answers classified here, on the calling task; the event loop only drives
    /// the transfers.
    func send(_ ready: [(DeliveryTarget, [UInt8])], token: FCMAccessToken) async -> [DeliveryResult] {
        await CredentialRenewal.send(
            ready, with: token,
            send: { batch, current in
                // Every request of the batch carries the same headers.
                let headers = [
                    HTTPHeader("authorization", "Bearer \(current.value)"),
                    HTTPHeader("content-type", "application/json; charset=utf-8"),
                ]
                let requests = batch.map { HTTPRequest(method: "POST", url: sendURL, headers: headers, body: $0.1) }
                let responses = await http.send(all: requests, maxInFlight: FCMChannel.maximumInFlight)
                return zip(batch, responses).map {
                    item, response -> (
                        (DeliveryTarget, [UInt8]), CredentialRenewal.Answer<DeliveryResult, (Int, String)>
                    )
                    in
                    switch answer(item.0, response) {
                    case .result(let r): return (item, .done(r))
                    case .unauthenticated(let status, let reason): return (item, .rejected((status, reason)))
                    }
                }
            },
            renew: { current in await tokens.token(rejecting: current.value) },
            giveUp: { item, rejection, why in
                switch why {
                case .rejectedAgain:
                    return .failed(item.0, status: rejection.0, reason: "\(rejection.1) (after a token refresh)")
                case .renewalFailed(let e): return FCMChannel.result(for: e, item.0)
                }
            })
    }

    /// Classifies one answer (or transport error).
    private func answer(_ target: DeliveryTarget, _ answered: Result<HTTPResponse, HTTPError>) -> Answer {
        let response: HTTPResponse
        switch answered {
        case .success(let r): response = r
        case .failure(let error): return .result(.retry(target, reason: "FCM unreachable: \(error.description)"))
        }
        let status = response.status
        let verdict = FCMSendVerdict.classify(
            status: status, body: response.body, retryAfter: response.header("retry-after"), now: clock.now())
        switch verdict {
        case .delivered(let name):
            return .result(.delivered(target, status: status, providerMessageId: name))
        case .dead(let reason):
            return .result(.dead(target, status: status, reason: reason))
        case .retry(let reason, let after):
            return .result(.retry(target, status: status, reason: reason, retryAfter: after))
        case .failed(let reason):
            return .result(.failed(target, status: status, reason: reason))
        case .unauthenticated(let reason):
            return .unauthenticated(status: status, reason: reason)
        }
    }

    static func result(for error: FCMTokenError, _ target: DeliveryTarget) -> DeliveryResult {
        switch error {
        case .rejected(let status, let reason):
            return .failed(target, status: status, reason: "OAuth credentials rejected: \(reason)")
        case .unavailable(let status, let reason, let after):
            return .retry(target, status: status, reason: reason, retryAfter: after)
        }
    }
}
