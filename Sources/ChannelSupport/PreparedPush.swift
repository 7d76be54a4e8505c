import ChannelAPI

/// A push whose payload the client of a relay composed already (Herald serving a relay protocol,
/// `docs/relay-server.md`): the channel sends ``payload`` as it is, with these headers, to each target's
/// token, and classifies the answers as it does for its own deliveries.
public struct PreparedPush: Sendable, Equatable {
    /// The provider's push type (`alert`, `background`).
    public var pushType: String
    /// The provider priority (APNs: 10 or 5).
    public var priority: Int
    /// Unix seconds after which the provider drops the push; 0: deliver once, do not store.
    public var expiration: Int64
    /// The collapse id (APNs `apns-collapse-id`), truncated to the provider's limit; nil for none.
    public var collapseID: String?
    /// The provider payload (APNs: the JSON body with `aps`; FCM: the HTTP v1 `message` object without
    /// `token`, which the channel adds per target).
    public var payload: JSONValue

    /// Creates a prepared push.
    public init(
        pushType: String = "alert", priority: Int = 10, expiration: Int64 = 0, collapseID: String?, payload: JSONValue
    ) {
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }
}

/// The provider form a ``PreparedPush``'s payload must have for a channel.
public enum PreparedPushKind: String, Sendable, Equatable {
    /// An APNs JSON body (`{"aps":…}`).
    case apns
    /// An FCM HTTP v1 `message` object without `token`.
    case fcm
}

/// A channel that can send a ``PreparedPush`` (the `apns` and `fcm` channels): what a relay protocol
/// module delivers through.
public protocol PreparedPushSending: Sendable {
    /// The payload form the channel sends (``PreparedPushKind/apns`` unless the channel says otherwise).
    var preparedKind: PreparedPushKind { get }

    /// Sends `push` to every target (each target's device carries `token` and, for APNs, an optional
    /// `environment`); one result per target.
    func deliver(prepared push: PreparedPush, to targets: [DeliveryTarget]) async -> [DeliveryResult]
}

extension PreparedPushSending {
    /// APNs, the form of the first prepared-push channel.
    public var preparedKind: PreparedPushKind { .apns }
}
