import ChannelAPI
import ChannelSupport

/// The platform the APNs module declares: `ios`, a hex device `token`, an optional hapi `pushKey`
/// and an optional `environment`.
public enum APNsPlatform {
    /// `ios`.
    public static let descriptor = PlatformDescriptor(
        name: "ios", address: { $0.token },
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["token", "pushKey", "environment"])
            let token = try fields.requireString("token", max: 200)
            guard token.count % 2 == 0, token.allSatisfy({ $0.isHexDigit }) else {
                throw ValidationError(field: "token", "must be the device token in hex")
            }
            if fields["pushKey"] != nil { try PushKey.validate(fields["pushKey"], urlSafe: false) }
            if let env = fields["environment"] {
                guard let e = env.stringValue, ["production", "sandbox"].contains(e) else {
                    throw ValidationError(field: "environment", "must be production or sandbox")
                }
            }
        })
}
