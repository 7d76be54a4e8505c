import ChannelAPI
import ChannelSupport
import Foundation

/// One token a relay delivers to, with its APNs environment (`production`, `sandbox`) when the
/// request named one.
public struct RelayTarget: Sendable, Equatable {
    /// The provider token (APNs: hex).
    public var token: String
    /// `production` or `sandbox`; nil: the channel's default.
    public var environment: String?

    /// Creates a target.
    public init(token: String, environment: String? = nil) {
        self.token = token
        self.environment = environment
    }
}

/// What a relay protocol delivers through: the channel its config names (Herald's own `apns`), a
/// state store shared by every `herald serve` on the same store, and the clock.
public struct RelayDelivery: Sendable {
    /// The channel named by the relay's `channel:` key.
    public let channelName: String
    /// The time.
    public let clock: any HeraldClock
    let channel: @Sendable (String) -> (any Channel)?
    let stateStore: @Sendable (String) -> any ChannelStateStore
    let newId: @Sendable () -> String
    let countPush: @Sendable (DeliveryOutcome) -> Void
    let gate: RelayPushGate?

    /// Creates a facility over channel lookup and store state (``RelayHub`` makes it from the router);
    /// `gate` bounds the pushes in flight across requests.
    public init(
        channelName: String, clock: any HeraldClock, channel: @escaping @Sendable (String) -> (any Channel)?,
        stateStore: @escaping @Sendable (String) -> any ChannelStateStore,
        newId: @escaping @Sendable () -> String = { UUIDGenerator.make(random: SystemRandom()) },
        countPush: @escaping @Sendable (DeliveryOutcome) -> Void = { _ in }, gate: RelayPushGate? = nil
    ) {
        self.gate = gate
        self.countPush = countPush
        self.channelName = channelName
        self.clock = clock
        self.channel = channel
        self.stateStore = stateStore
        self.newId = newId
    }

    /// The store area of one relay protocol (bindings, replay windows); shared across processes.
    public func state(_ protocolName: String) -> any ChannelStateStore { stateStore("relay." + protocolName) }

    /// Sends `push` once to each target through the configured channel; one result per target, in
    /// order. Nil when the channel is missing or cannot send prepared pushes (a config error).
    public func send(_ push: PreparedPush, to targets: [RelayTarget]) async -> [DeliveryResult]? {
        guard let sender = channel(channelName) as? any PreparedPushSending else { return nil }
        let delivery = targets.enumerated().map { i, t in
            var fields: [String: JSONValue] = ["token": .string(t.token)]
            if let env = t.environment { fields["environment"] = .string(env) }
            return DeliveryTarget(
                device: Device(namespace: "relay", deviceId: "relay-\(i)", platform: "ios", fields: fields),
                deliveryId: newId())
        }
        await gate?.acquire(delivery.count)
        let results = await sender.deliver(prepared: push, to: delivery)
        gate?.release(delivery.count)
        for r in results { countPush(r.outcome) }
        let byId = Dictionary(results.map { ($0.deliveryId, $0) }, uniquingKeysWith: { a, _ in a })
        return delivery.map { byId[$0.deliveryId] ?? .failed($0, reason: "the channel gave no result") }
    }
}
