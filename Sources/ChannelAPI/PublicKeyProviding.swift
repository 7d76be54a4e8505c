/// A channel that owns a public key operators hand out (the Web Push applicationServerKey, a
/// relay's public key). Every such channel gets `herald keys public --channel NAME` and, on
/// `herald serve`, `GET /v1/channels/{name}/public-key`; a channel may offer the key under a name
/// and a path of its own too (``publicKeyOffer``).
public protocol PublicKeyProviding: Sendable {
    /// The current public key in the form clients need, creating the key pair on first use.
    /// With `rotate`, adds a new key pair first (older ones keep serving their subscriptions).
    func publicKey(rotate: Bool) async throws -> String

    /// Where the key is offered besides the two above; nil (the default) for nowhere else.
    var publicKeyOffer: PublicKeyOffer? { get }

    /// Whether this instance has a key at all (a type whose configs differ, as the relay channel's
    /// protocols, says no for those without one: they are then treated as providing none). The
    /// default is true.
    var hasPublicKey: Bool { get }
}

extension PublicKeyProviding {
    /// No offer of its own: the key is reached by the channel's name only.
    public var publicKeyOffer: PublicKeyOffer? { nil }

    /// Every instance has a key.
    public var hasPublicKey: Bool { true }
}

/// A kind of public key offered by a command and a path of its own, for clients that know the
/// kind but not the channel's name (Web Push: `herald keys vapid`, `/v1/webpush/vapid-public-key`).
/// Without `--channel` or `?channel=`, the first channel in the config making the same offer
/// answers.
public struct PublicKeyOffer: Sendable, Equatable {
    /// `herald keys <command>` prints the key.
    public var command: String
    /// The field `herald keys <command> --format json` prints the key in.
    public var jsonField: String
    /// An API path (`GET`, scope `read` or `devices`) answering `{"publicKey":…,"channel":…}`, or nil.
    public var path: String?

    /// Creates an offer.
    public init(command: String, jsonField: String = "publicKey", path: String? = nil) {
        self.command = command
        self.jsonField = jsonField
        self.path = path
    }
}
