/// The outcome taxonomy of contract §5.
public enum DeliveryOutcome: String, Sendable, Codable, CaseIterable {
    /// The provider accepted the message.
    case delivered
    /// The provider says the token, subscription or chat is gone; the router removes the device.
    case dead
    /// Transient; the router queues another attempt.
    case retry
    /// Permanent for this message (bad payload, too large, rejected credentials); the device is kept.
    case failed
    /// A route rule skipped it.
    case suppressed
}

/// What one delivery attempt to one device (or one sink) came to.
public struct DeliveryResult: Sendable, Equatable {
    /// The target's ``DeliveryTarget/deliveryId``: the router matches every result back to its target by it.
    public var deliveryId: String
    /// The device, or nil for sink channels.
    public var deviceId: String?
    /// The device's platform, or nil for sinks.
    public var platform: String?
    /// The outcome.
    public var outcome: DeliveryOutcome
    /// The provider's HTTP status, when there was one.
    public var status: Int?
    /// The provider's reason or Herald's explanation, kept verbatim (unknown provider reasons too).
    public var reason: String?
    /// For `retry`: the provider's requested delay (Retry-After, Telegram `retry_after`).
    public var retryAfter: Duration?
    /// The provider's message id (apns-id, FCM message name, Location), when returned.
    public var providerMessageId: String?
    /// Extra facts worth recording (e.g. `alertDropped`, rate-limit counters).
    public var details: [String: String]

    /// Creates a result.
    public init(
        deliveryId: String, deviceId: String?, platform: String? = nil, outcome: DeliveryOutcome, status: Int? = nil,
        reason: String? = nil, retryAfter: Duration? = nil, providerMessageId: String? = nil,
        details: [String: String] = [:]
    ) {
        self.deliveryId = deliveryId
        self.deviceId = deviceId
        self.platform = platform
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
        self.providerMessageId = providerMessageId
        self.details = details
    }

    /// Accepted by the provider.
    public static func delivered(
        _ target: DeliveryTarget, status: Int? = nil, providerMessageId: String? = nil, details: [String: String] = [:]
    ) -> DeliveryResult {
        DeliveryResult(target, .delivered, status: status, providerMessageId: providerMessageId, details: details)
    }

    /// The token is gone; the device will be removed.
    public static func dead(_ target: DeliveryTarget, status: Int? = nil, reason: String) -> DeliveryResult {
        DeliveryResult(target, .dead, status: status, reason: reason)
    }

    /// Transient failure; try again (after `retryAfter` if the provider said so).
    public static func retry(
        _ target: DeliveryTarget, status: Int? = nil, reason: String, retryAfter: Duration? = nil
    ) -> DeliveryResult {
        DeliveryResult(target, .retry, status: status, reason: reason, retryAfter: retryAfter)
    }

    /// Permanent failure for this message; the device is kept.
    public static func failed(_ target: DeliveryTarget, status: Int? = nil, reason: String) -> DeliveryResult {
        DeliveryResult(target, .failed, status: status, reason: reason)
    }

    /// A result for `target`: its delivery id, device id and platform.
    private init(
        _ target: DeliveryTarget, _ outcome: DeliveryOutcome, status: Int?, reason: String? = nil,
        retryAfter: Duration? = nil, providerMessageId: String? = nil, details: [String: String] = [:]
    ) {
        self.init(
            deliveryId: target.deliveryId, deviceId: target.device?.deviceId, platform: target.device?.platform,
            outcome: outcome, status: status, reason: reason, retryAfter: retryAfter,
            providerMessageId: providerMessageId, details: details)
    }
}
