import ChannelAPI

/// A channel that signs with VAPID keys and can hand out the public key browsers subscribe with.
/// `herald keys vapid` calls it.
public protocol VAPIDKeyProviding: Sendable {
    /// The newest VAPID public key as base64url of the 65-byte uncompressed point (the
    /// `applicationServerKey` for `PushManager.subscribe`), creating the key pair on first use.
    func applicationServerKey() throws -> String

    /// Adds a new newest key pair and returns its public key (`herald keys vapid --rotate`). Older
    /// keys keep signing for the subscriptions made with them.
    func rotateApplicationServerKey() throws -> String
}

extension WebPushChannel: PublicKeyProviding {
    /// The applicationServerKey for `herald keys vapid` (with `rotate`, after adding a new key pair).
    public func publicKey(rotate: Bool) async throws -> String {
        rotate ? try rotateApplicationServerKey() : try applicationServerKey()
    }

    /// `herald keys vapid` (JSON field `applicationServerKey`) and `GET /v1/webpush/vapid-public-key`.
    public var publicKeyOffer: PublicKeyOffer? { WebPushChannel.vapidOffer }

    /// The offer of every Web Push channel.
    public static let vapidOffer = PublicKeyOffer(
        command: "vapid", jsonField: "applicationServerKey", path: "/v1/webpush/vapid-public-key")
}
