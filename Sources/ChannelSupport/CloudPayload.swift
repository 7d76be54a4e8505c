/// What every cloud payload (FCM data, APNs custom keys) carries beside the notification's content,
/// so that an app which got a notification one way can recognise the same notification coming
/// another way: over its local stream (`local` channel) and, after the fallback, through the cloud.
public enum CloudPayload {
    /// The key carrying the notification's id: the `id` of its history, its events, its Web Push
    /// payload and its local-stream event. Not content, so it is sent under `content: generic` too;
    /// hapi-v1's encrypted plaintext keeps the seed's exact keys and does not carry it.
    public static let notificationIdKey = "heraldNotificationId"
}
