import ChannelAPI
import ChannelSupport

/// The platforms the FCM module declares: `phone` and `wear`, an FCM registration `token` (no
/// spaces or control characters) and an optional hapi `pushKey` (base64 of 32 bytes).
public enum FCMPlatforms {
    /// `phone` and `wear`.
    public static let all: [PlatformDescriptor] = ["phone", "wear"].map(descriptor)

    static func descriptor(_ name: String) -> PlatformDescriptor {
        PlatformDescriptor(
            name: name, address: { $0.token },
            validate: {
                fields throws(ValidationError) in
                try fields.allow(["token", "pushKey"])
                let token = try fields.requireString("token")
                guard !token.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
                    throw ValidationError(field: "token", "must not contain spaces or control characters")
                }
                if fields["pushKey"] != nil { try PushKey.validate(fields["pushKey"], urlSafe: false) }
            })
    }
}
