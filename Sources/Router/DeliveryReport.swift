import ChannelAPI

/// What `send` returns (contract §5): one entry per planned delivery with its current outcome.
public struct DeliveryReport: Sendable {
    /// The notification's stored id (``NotificationKey``: the client's id, or a scoped key when
    /// another namespace held it first).
    public var id: String
    /// Its namespace.
    public var namespace: String
    /// The deliveries.
    public var deliveries: [DeliveryRecord]
    /// `true` when the notification id was already stored: nothing was routed, this is the stored report.
    public var replayed = false

    /// The contract JSON; a replay adds `"replayed": true`. `id` is the client's id
    /// (``NotificationKey/publicID(of:)``), also for a notification stored under a scoped key.
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(NotificationKey.publicID(of: id)), "namespace": .string(namespace),
            "deliveries": .array(deliveries.map(\.reportJSON)),
        ]
        if replayed { object["replayed"] = true }
        return .object(object)
    }

    /// The deliveries with a given outcome.
    public func deliveries(_ state: DeliveryState) -> [DeliveryRecord] { deliveries.filter { $0.state == state } }
}

/// What ``Router/sendSummarized(_:)`` returns: the notification and how many of its deliveries
/// ended in each state, without the deliveries themselves (read those with ``Router/forEachDelivery(of:_:)``).
public struct SendSummary: Sendable, Equatable {
    /// The notification id.
    public var id: String
    /// Its namespace.
    public var namespace: String
    /// How many deliveries are in each state.
    public var counts: [DeliveryState: Int]
    /// `true` when the notification id was already stored: nothing was routed.
    public var replayed = false

    /// Every delivery planned.
    public var total: Int { counts.values.reduce(0, +) }
}

/// What a drain did.
public struct DrainSummary: Sendable, Equatable {
    /// Deliveries attempted.
    public var attempted: Int
    /// Deliveries still pending or waiting for a retry.
    public var remaining: Int
}
