import ChannelAPI

/// The platform the Web Push module declares: `web`, a browser `subscription` (its endpoint is the
/// address) and an optional `vapidKeyId`.
public enum WebPushPlatform {
    /// `web`.
    public static let descriptor = PlatformDescriptor(
        name: "web", address: { $0.fields["subscription"]?["endpoint"]?.stringValue },
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["subscription", "vapidKeyId"])
            try fields.optionalString("vapidKeyId")
            guard let sub = fields["subscription"]?.objectValue else {
                throw ValidationError(field: "subscription", "required object {endpoint, keys: {p256dh, auth}}")
            }
            guard let endpoint = sub["endpoint"]?.stringValue, endpoint.hasPrefix("https://") else {
                throw ValidationError(field: "subscription.endpoint", "required https URL")
            }
            guard let keys = sub["keys"]?.objectValue else {
                throw ValidationError(field: "subscription.keys", "required object")
            }
            guard keys["p256dh"]?.stringValue != nil else {
                throw ValidationError(field: "subscription.keys.p256dh", "required string")
            }
            guard keys["auth"]?.stringValue != nil else {
                throw ValidationError(field: "subscription.keys.auth", "required string")
            }
        })
}
