import ChannelAPI
import HeraldCrypto

/// The 32-byte `pushKey` a hapi app registers for its end-to-end envelope (FCM `phone`/`wear`, APNs
/// `ios`, Pulse): base64, or base64url for Pulse.
public enum PushKey {
    /// Checks that `value` is base64 (base64url when `urlSafe`) of exactly 32 bytes.
    public static func validate(_ value: JSONValue?, urlSafe: Bool, field: String = "pushKey") throws(ValidationError) {
        guard let s = value?.stringValue else {
            throw ValidationError(field: field, "required: base64 of exactly 32 bytes")
        }
        let decoded = urlSafe ? try? Base64.urlDecode(s) : try? Base64.decode(s)
        guard let bytes = decoded, bytes.count == 32 else {
            throw ValidationError(field: field, "must be \(urlSafe ? "base64url" : "base64") of exactly 32 bytes")
        }
    }
}
