import ChannelAPI

/// openchamber's "generic" content mode: a fixed title per notification type and the session
/// name as the body, so no message content leaves the machine.
public enum GenericContent {
    /// The fixed title for a notification type.
    public static func title(for type: String) -> String {
        switch type {
        case "ready", "task-complete", "task-notification": "Agent response is ready"
        case "permission-request": "Agent needs permission"
        case "question", "input-required": "Agent has a question"
        case "error", "task-failed": "Agent hit an error"
        default: "New agent activity"
        }
    }

    /// The body: the session name, or a neutral text.
    public static func body(for notification: HeraldNotification) -> String {
        notification.data["sessionName"] ?? "Open the app to see details"
    }
}
