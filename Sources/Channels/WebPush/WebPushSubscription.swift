import ChannelAPI
import HeraldCrypto

/// A device's `subscription` (`{endpoint, keys: {p256dh, auth}}`), parsed and validated: the
/// endpoint passes ``URLPolicy`` and the keys are a P-256 point and a 16-byte secret.
public struct WebPushSubscription: Sendable {
    /// The push resource URL.
    public let endpoint: String
    /// The subscriber's keys, validated.
    public let key: WebPushSubscriberKey
    /// The VAPID `aud` for this endpoint (its origin), computed once.
    public let audience: String?
    /// Where a push to ``endpoint`` may connect: public addresses only, unless `allow-hosts` names its host.
    public let addressPolicy: AddressPolicy

    /// Parses `device.fields["subscription"]`; errors name the field
    /// (`subscription.endpoint`, `subscription.keys.p256dh`, `subscription.keys.auth`).
    public init(device: Device, allowHosts: [String]) throws(ValidationError) {
        guard let sub = device.fields["subscription"]?.objectValue else {
            throw ValidationError(field: "subscription", "required object {endpoint, keys: {p256dh, auth}}")
        }
        guard let endpoint = sub["endpoint"]?.stringValue, !endpoint.isEmpty else {
            throw ValidationError(field: "subscription.endpoint", "required https URL")
        }
        guard endpoint.utf8.count <= 2048 else {
            throw ValidationError(field: "subscription.endpoint", "longer than 2048 bytes")
        }
        let parsed = try URLPolicy.check(endpoint, field: "subscription.endpoint", allowHosts: allowHosts)
        guard let keys = sub["keys"]?.objectValue else {
            throw ValidationError(field: "subscription.keys", "required object {p256dh, auth}")
        }
        guard let p256dh = keys["p256dh"]?.stringValue else {
            throw ValidationError(field: "subscription.keys.p256dh", "required string")
        }
        guard let auth = keys["auth"]?.stringValue else {
            throw ValidationError(field: "subscription.keys.auth", "required string")
        }
        let point: [UInt8]
        do { point = try Base64.decodeEitherAlphabet(p256dh) } catch {
            throw ValidationError(field: "subscription.keys.p256dh", "must be base64url (or base64)")
        }
        guard point.count == 65, point.first == 0x04 else {
            throw ValidationError(
                field: "subscription.keys.p256dh",
                "must be a 65-byte uncompressed P-256 public key, got \(point.count) bytes")
        }
        let publicKey: P256PublicKey
        do { publicKey = try P256PublicKey(x963Representation: point) } catch {
            throw ValidationError(field: "subscription.keys.p256dh", "is not a point on the P-256 curve")
        }
        let secret: [UInt8]
        do { secret = try Base64.decodeEitherAlphabet(auth) } catch {
            throw ValidationError(field: "subscription.keys.auth", "must be base64url (or base64)")
        }
        guard secret.count == 16 else {
            throw ValidationError(field: "subscription.keys.auth", "must be 16 bytes, got \(secret.count)")
        }
        do { key = try WebPushSubscriberKey(publicKey: publicKey, authSecret: secret) } catch {
            throw ValidationError(field: "subscription.keys.auth", error.message)
        }
        self.endpoint = endpoint
        self.audience = VAPID.audience(of: parsed)
        self.addressPolicy = URLPolicy.isAllowListed(parsed, allowHosts: allowHosts) ? .any : .publicOnly
    }

    /// The subscription as stored: keys normalised to unpadded base64url.
    public var json: JSONValue {
        .object([
            "endpoint": .string(endpoint),
            "keys": .object([
                "p256dh": .string(Base64.urlEncode(key.publicKey.x963Representation)),
                "auth": .string(Base64.urlEncode(key.authSecret)),
            ]),
        ])
    }
}
