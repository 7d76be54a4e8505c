import ChannelAPI

/// How Herald treats one APNs answer: the dead-token policy, as a pure function.
public enum APNsResponseClass: Sendable, Equatable {
    /// Accepted (200); `apnsID` is the response's `apns-id` header.
    case delivered(apnsID: String?)
    /// The token is gone (410 Unregistered/ExpiredToken, 400 BadDeviceToken): remove the device.
    /// `timestamp` is 410's `timestamp` (milliseconds) as given.
    case dead(reason: String, timestamp: String?)
    /// 403 ExpiredProviderToken: renew the provider token and retry once.
    case expiredProviderToken
    /// Permanent for this message; the device is kept. `configError` marks answers an operator must
    /// fix (provider token, key, topic) and that are logged at error level.
    case failed(reason: String, configError: Bool)
    /// Transient: try again later.
    case retry(reason: String, retryAfter: Duration?, configError: Bool)
}

/// Maps APNs responses and transport errors to ``APNsResponseClass``.
public enum APNsResponseClassifier {
    /// 400 reasons that mean the channel's configuration (topic, push type) is wrong.
    static let config400: Set<String> = [
        "DeviceTokenNotForTopic", "BadTopic", "TopicDisallowed", "MissingTopic", "InvalidPushType",
    ]

    /// The `reason` (and 410 `timestamp`) of an error body; nil when the body is not APNs JSON.
    public static func parseBody(_ body: [UInt8]) -> (reason: String, timestamp: String?)? {
        guard !body.isEmpty, let json = try? JSONValue.parse(body), let reason = json["reason"]?.stringValue else {
            return nil
        }
        let timestamp: String? =
            switch json["timestamp"] {
            case .string(let s): s
            case .number: json["timestamp"]?.intValue.map(String.init)
            default: nil
            }
        return (reason, timestamp)
    }

    /// Classifies a response.
    /// - Parameters:
    ///   - status: The HTTP status.
    ///   - body: The response body.
    ///   - apnsID: The response's `apns-id` header.
    ///   - retryAfter: A parsed `Retry-After`, if the response had one.
    ///   - activityToken: Whether the request went to a Live Activity push token rather than the
    ///     device's own token; such a token's death does not make the device dead.
    public static func classify(
        status: Int, body: [UInt8], apnsID: String? = nil, retryAfter: Duration? = nil, activityToken: Bool = false
    ) -> APNsResponseClass {
        if (200..<300).contains(status) { return .delivered(apnsID: apnsID) }
        let parsed = parseBody(body)
        let reason =
            parsed?.reason ?? "HTTP \(status)"
            + (body.isEmpty ? "" : ": " + String(decoding: body.prefix(200), as: UTF8.self))
        func dead() -> APNsResponseClass {
            activityToken
                ? .failed(reason: "\(reason) (Live Activity push token; device kept)", configError: false)
                : .dead(reason: reason, timestamp: parsed?.timestamp)
        }
        switch status {
        case 410:
            if let r = parsed?.reason, r == "Unregistered" || r == "ExpiredToken" { return dead() }
            return .failed(reason: reason, configError: false)
        case 400:
            switch parsed?.reason {
            case "BadDeviceToken": return dead()
            case "IdleTimeout": return .retry(reason: reason, retryAfter: retryAfter, configError: false)
            case let r? where config400.contains(r): return .failed(reason: reason, configError: true)
            default: return .failed(reason: reason, configError: false)
            }
        case 403:
            if parsed?.reason == "ExpiredProviderToken" { return .expiredProviderToken }
            return .failed(reason: reason, configError: true)
        case 429:
            if parsed?.reason == "TooManyProviderTokenUpdates" {
                return .retry(
                    reason: reason, retryAfter: retryAfter ?? .seconds(APNsProviderToken.minimumRenewalInterval),
                    configError: true)
            }
            return .retry(reason: reason, retryAfter: retryAfter, configError: false)
        case 500...599:
            return .retry(reason: reason, retryAfter: retryAfter, configError: false)
        default:
            return .failed(reason: reason, configError: false)
        }
    }

    /// Classifies a transport failure: timeouts, refused connections and resets are retried (the
    /// same `apns-id` is reused); TLS and request errors are permanent; shutdown and cancellation
    /// leave the delivery for a later attempt.
    public static func classify(error: HTTPError) -> APNsResponseClass {
        if error.isTransient { return .retry(reason: error.description, retryAfter: nil, configError: false) }
        switch error.code {
        case .cancelled, .shutdown: return .retry(reason: error.description, retryAfter: nil, configError: false)
        case .tls: return .failed(reason: error.description, configError: true)
        default: return .failed(reason: error.description, configError: false)
        }
    }
}
