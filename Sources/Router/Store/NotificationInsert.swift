import ChannelAPI

/// One notification with its planned rows, as ``HeraldStore/insertNotifications(_:now:)`` stores it:
/// the arguments of one ``HeraldStore/insertNotification(_:steps:deliveries:now:)`` call.
public struct NotificationInsert: Sendable {
    /// The notification.
    public var notification: HeraldNotification
    /// The step rules it was planned with.
    public var steps: [StepRule]
    /// Every planned delivery (suppressed ones included).
    public var deliveries: [DeliveryRecord]

    /// Bundles a notification with its step rules and planned deliveries.
    public init(notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord]) {
        self.notification = notification
        self.steps = steps
        self.deliveries = deliveries
    }
}
