import ChannelAPI
import ChannelSupport

/// The platforms the relay module declares: `pulse` (a Pulse relay device; its address is
/// `pulse:<relayDeviceId>`) and `mobile-app` (a Home Assistant companion app; its push `token`).
public enum RelayPlatforms {
    /// `pulse` and `mobile-app`.
    public static let all: [PlatformDescriptor] = [pulse, mobileApp]

    /// `pulse`.
    public static let pulse = PlatformDescriptor(
        name: "pulse", address: { $0.string("relayDeviceId").map { "pulse:\($0)" } }, addressIsSecret: false,
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["relay", "relayDeviceId", "sourceId", "pushKey", "deviceName"])
            try fields.requireString("relay")
            try fields.requireString("relayDeviceId", max: 256)
            try fields.requireString("sourceId", max: 256)
            try PushKey.validate(fields["pushKey"], urlSafe: true)
            try fields.optionalString("deviceName")
        })

    /// `mobile-app`. `registrationInfo.webhookId` is a credential (anyone who knows it can post to
    /// the app's Home Assistant webhook), so it is a secret field: masked in listings and answers,
    /// scrubbed from delivery results, as `token` and `secret` are.
    public static let mobileApp = PlatformDescriptor(
        name: "mobile-app", secretFields: ["webhookId"], address: { $0.token },
        validate: {
            fields throws(ValidationError) in
            try fields.allow(["pushUrl", "token", "registrationInfo", "secret"])
            guard let url = fields["pushUrl"]?.stringValue, url.hasPrefix("https://") else {
                throw ValidationError(field: "pushUrl", "required https URL")
            }
            _ = url
            try fields.requireString("token")
            guard let info = fields["registrationInfo"]?.objectValue else {
                throw ValidationError(field: "registrationInfo", "required object {appId, appVersion, osVersion}")
            }
            for k in ["appId", "appVersion", "osVersion"] where info[k]?.stringValue == nil {
                throw ValidationError(field: "registrationInfo.\(k)", "required string")
            }
            if fields["secret"] != nil { try validateHomeAssistantSecret(fields["secret"]) }
        })

    /// A Home Assistant registration `secret` is exactly 64 hex characters (32 bytes once
    /// hex-decoded), as HA's `secrets.token_hex(32)` creates it.
    static func validateHomeAssistantSecret(_ v: JSONValue?) throws(ValidationError) {
        guard let s = v?.stringValue, s.utf8.count == 64, s.utf8.allSatisfy(\.isASCIIHexDigit) else {
            throw ValidationError(
                field: "secret", "must be the Home Assistant registration secret: exactly 64 hex characters (32 bytes)")
        }
    }
}

extension UInt8 {
    /// `0-9`, `a-f` or `A-F` in ASCII.
    fileprivate var isASCIIHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}
