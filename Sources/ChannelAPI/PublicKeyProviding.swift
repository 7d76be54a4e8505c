/// A channel that owns a public key operators hand out (the Web Push applicationServerKey, a
/// relay's public key). `herald keys` asks for it.
public protocol PublicKeyProviding: Sendable {
    /// The current public key in the form clients need, creating the key pair on first use.
    /// With `rotate`, adds a new key pair first (older ones keep serving their subscriptions).
    func publicKey(rotate: Bool) async throws -> String
}
