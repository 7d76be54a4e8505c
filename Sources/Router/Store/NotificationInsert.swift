import ChannelAPI

/// One notification with its outbox, as ``HeraldStore/insertNotifications(_:now:suppressed:)`` stores
/// it: delivery rows given as they are, and outbox groups the store expands against the devices of
/// the notification's namespace (as ``HeraldStore/insertNotification(_:steps:groups:now:suppressed:)``
/// does), so a large fan-out is not held in memory.
public struct NotificationInsert: Sendable {
    /// The notification.
    public var notification: HeraldNotification
    /// The step rules it was planned with.
    public var steps: [StepRule]
    /// Delivery rows stored as given (suppressed ones included).
    public var deliveries: [DeliveryRecord]
    /// Outbox groups the store expands into rows, after ``deliveries``.
    public var groups: [OutboxGroup]

    /// Bundles a notification with its step rules and planned deliveries.
    public init(notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord]) {
        self.notification = notification
        self.steps = steps
        self.deliveries = deliveries
        self.groups = []
    }

    /// Bundles a notification with its step rules and the outbox groups of its plan
    /// (``Planner/outline(_:config:platformCounts:cooledDownSteps:)``).
    public init(notification: HeraldNotification, steps: [StepRule], groups: [OutboxGroup]) {
        self.notification = notification
        self.steps = steps
        self.deliveries = []
        self.groups = groups
    }
}
