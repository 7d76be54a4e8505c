/// The stand-in a channel factory returns in a dry run (``ChannelConfig/offline``) when the real
/// channel cannot be built without its credentials (a key file, an unset secret). It accepts every
/// registration and delivers nothing: each target fails with a reason saying so.
public struct DryRunChannel: Channel {
    /// The channel's name.
    public let name: String

    /// Creates a stand-in for the channel `name`.
    public init(name: String) { self.name = name }

    /// Fails every target: a dry-run channel has no credentials.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        request.targets.map { .failed($0, reason: "channel \(name) was built for a dry run, without credentials") }
    }
}
