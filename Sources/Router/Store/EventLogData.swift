import ChannelAPI
import Foundation

/// The `data` objects of event-log entries (``EventLogEntry/data``), built the same way by every
/// store (pure). `notificationId` is the client's id (``NotificationKey/publicID(of:)``): the one it
/// sent, also for a notification stored under a scoped key; the entry's `namespace` tells two apart.
enum EventLogData {
    /// Kind `notification`: the notification was accepted with `planned` deliveries.
    static func notification(id: String, namespace: String, planned: Int) -> JSONValue {
        .object([
            "notificationId": .string(NotificationKey.publicID(of: id)), "namespace": .string(namespace),
            "planned": .number(Double(planned)),
        ])
    }

    /// Kind `delivery`: one outcome of one delivery.
    static func delivery(
        notificationId: String, channel: String, deviceId: String?, outcome: String, attempt: Int, reason: String?
    ) -> JSONValue {
        var o: [String: JSONValue] = [
            "notificationId": .string(NotificationKey.publicID(of: notificationId)), "channel": .string(channel),
            "outcome": .string(outcome),
            "attempt": .number(Double(attempt)),
        ]
        if let deviceId { o["deviceId"] = .string(deviceId) }
        if let reason { o["reason"] = .string(reason) }
        return .object(o)
    }

    /// ``delivery(notificationId:channel:deviceId:outcome:attempt:reason:)``'s canonical text, written
    /// directly (the record of a large fan-out writes one per delivery).
    static func deliveryText(
        notificationId: String, channel: String, deviceId: String?, outcome: String, attempt: Int, reason: String?
    ) -> String {
        var o = JSONObjectWriter()
        o.add("attempt", attempt)
        o.add("channel", channel)
        o.add("deviceId", deviceId)
        o.add("notificationId", NotificationKey.publicID(of: notificationId))
        o.add("outcome", outcome)
        o.add("reason", reason)
        return o.text
    }

    /// A lifecycle kind, as recorded.
    static func lifecycle(_ event: LifecycleEvent) -> JSONValue {
        var o: [String: JSONValue] = [
            "notificationId": .string(NotificationKey.publicID(of: event.notificationId)),
            "kind": .string(event.kind.rawValue),
        ]
        if let a = event.actionId { o["action"] = .string(a) }
        if let d = event.deviceId { o["deviceId"] = .string(d) }
        if !event.actionData.isEmpty { o["data"] = .object(event.actionData.mapValues { .string($0) }) }
        return .object(o)
    }
}
