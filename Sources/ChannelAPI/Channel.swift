/// One device (or, for sink channels, nothing) that a delivery goes to.
public struct DeliveryTarget: Sendable, Equatable {
    /// The device; nil for sink channels (log, webhook).
    public var device: Device?
    /// Stable id of this delivery, the same across retries: use it as the provider's idempotency
    /// key where there is one (`apns-id`, FCM data, webhook-id).
    public var deliveryId: String
    /// 1 for the first attempt.
    public var attempt: Int

    /// Creates a target.
    public init(device: Device?, deliveryId: String, attempt: Int = 1) {
        self.device = device
        self.deliveryId = deliveryId
        self.attempt = attempt
    }
}

/// What the router asks a channel to do: deliver one notification to a batch of targets.
public struct DeliveryRequest: Sendable {
    /// The notification.
    public var notification: HeraldNotification
    /// The targets; one result is expected per target, in any order, matched by its delivery id.
    public var targets: [DeliveryTarget]
    /// The namespace's pending-tags count (for channels configured with `badge: pending-tags`);
    /// nil when the router does not track it for this channel.
    public var pendingBadge: Int?

    /// Creates a request.
    public init(notification: HeraldNotification, targets: [DeliveryTarget], pendingBadge: Int? = nil) {
        self.notification = notification
        self.targets = targets
        self.pendingBadge = pendingBadge
    }

    /// The badge to show: the notification's explicit badge, else the pending-tags count.
    public var effectiveBadge: Int? { notification.badge ?? pendingBadge }
}

/// The one delivery protocol every channel module implements.
///
/// A channel owns its payload format, encryption, auth and dead-token policy. It never touches the
/// store or another channel; what it needs is lent through ``ChannelContext`` at construction.
public protocol Channel: Sendable {
    /// Delivers one notification to a batch of targets and returns one result per target.
    /// Never throws: every failure is a ``DeliveryResult`` (`retry`, `failed`, `dead`).
    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult]

    /// Checks (and may normalise) a device registration before it is stored. Throw to refuse it.
    func validateRegistration(_ device: Device) async throws(ValidationError) -> Device

    /// Called after a device served by this channel has been stored (e.g. to register it at a relay).
    func didRegister(_ device: Device) async

    /// Starts receiving inbound events (callbacks, answers), if the channel has any. Returns when
    /// the task is cancelled. The default does nothing.
    func receive(into sink: ChannelEventSink) async

    /// Handles a webhook request `herald serve` received for this channel (see ``InboundWebhook``).
    /// Events it carries go to `sink`. The default answers ``InboundWebhookAnswer/notFound``.
    func receiveWebhook(_ request: InboundWebhook, into sink: ChannelEventSink) async -> InboundWebhookAnswer

    /// Releases resources. The default does nothing.
    func shutdown() async

    /// Secrets this channel knows beyond the config values the router already scrubs (key material
    /// loaded from files, access tokens it obtained, parts of a token a proxy may echo in another
    /// encoding). The router removes them from every result's reason and details before storing or
    /// printing it; read after each `deliver`, so a renewed token is included. The default is none.
    var secrets: [String] { get }

    /// The secret device fields of `platform` this channel declares beyond its descriptor's (an exec
    /// plugin's handshake), redacted in device listings like ``PlatformDescriptor/secretFields``;
    /// nil when the channel cannot say yet (the plugin has not started), so a listing redacts every
    /// field of such a device. The default is none.
    func secretDeviceFields(of platform: String) -> Set<String>?
}

extension Channel {
    /// Accepts every registration unchanged.
    public func validateRegistration(_ device: Device) async throws(ValidationError) -> Device { device }
    /// Does nothing.
    public func didRegister(_ device: Device) async {}
    /// Receives nothing.
    public func receive(into sink: ChannelEventSink) async {}
    /// Does nothing.
    public func shutdown() async {}
    /// None.
    public var secrets: [String] { [] }
    /// None beyond the descriptor's.
    public func secretDeviceFields(of platform: String) -> Set<String>? { [] }
}

/// An inbound event a channel reports (for example a Telegram button press).
public struct ChannelEvent: Sendable, Equatable {
    /// The kind of lifecycle event.
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// The device received it.
        case received
        /// The person tapped it.
        case tapped
        /// The person dismissed it.
        case dismissed
        /// The person chose an action.
        case action
    }

    /// The notification it belongs to.
    public var notificationId: String
    /// The kind.
    public var kind: Kind
    /// For `action`: the action id.
    public var actionId: String?
    /// Free data sent with the action.
    public var actionData: [String: String]
    /// The device that reported it, if known.
    public var deviceId: String?

    /// Creates an event.
    public init(
        notificationId: String, kind: Kind, actionId: String? = nil, actionData: [String: String] = [:],
        deviceId: String? = nil
    ) {
        self.notificationId = notificationId
        self.kind = kind
        self.actionId = actionId
        self.actionData = actionData
        self.deviceId = deviceId
    }
}

/// Where a channel hands inbound events; the router records them and emits them to embedders.
public protocol ChannelEventSink: Sendable {
    /// Records an event. Throws when the notification is unknown; the channel should then tell the
    /// person the request expired.
    func record(_ event: ChannelEvent) async throws
}
