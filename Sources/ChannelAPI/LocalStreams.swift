/// One notification for one device, sent down the device's open stream (the `local` channel).
public struct LocalPush: Sendable, Equatable {
    /// The device's namespace.
    public var namespace: String
    /// The device.
    public var deviceId: String
    /// The device's platform (the registration the delivery belongs to).
    public var platform: String
    /// The notification's stored id: what apps are sent, and what they confirm with.
    public var notificationId: String
    /// The delivery's id (the outbox row), stable across retries.
    public var deliveryId: String
    /// The event's JSON body, as the app reads it (see docs/http-api.md, "Local push").
    public var payload: JSONValue

    /// Creates a push.
    public init(
        namespace: String, deviceId: String, platform: String, notificationId: String, deliveryId: String,
        payload: JSONValue
    ) {
        self.namespace = namespace
        self.deviceId = deviceId
        self.platform = platform
        self.notificationId = notificationId
        self.deliveryId = deliveryId
        self.payload = payload
    }
}

/// How a ``LocalPush`` ended.
public enum LocalPushOutcome: String, Sendable, Equatable, CaseIterable {
    /// The app confirmed it (a `received` event naming its device) in time.
    case confirmed
    /// The device holds no open stream: nothing was sent.
    case notConnected = "not connected"
    /// It was written to the stream, and no confirmation came within the channel's `confirm`.
    case notConfirmed = "not confirmed"
    /// The stream it was written to closed before the app confirmed it.
    case streamClosed = "stream closed"
}

/// The open streams of apps (`GET /v1/devices/{deviceId}/stream`), as the `local` channel reaches
/// them: write one push down a device's stream and wait for its confirmation. `herald serve` holds
/// the streams; without it (or with no stream for the device) every push is
/// ``LocalPushOutcome/notConnected`` at once.
public protocol LocalStreams: Sendable {
    /// Sends `push` to its device's open stream and waits at most `confirmWithin` (on the injected
    /// clock) for the app's confirmation. Returns ``LocalPushOutcome/notConnected`` at once when the
    /// device has no open stream, ``LocalPushOutcome/streamClosed`` as soon as the stream closes.
    func push(_ push: LocalPush, confirmWithin: Duration) async -> LocalPushOutcome
}
