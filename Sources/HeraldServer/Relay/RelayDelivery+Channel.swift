import ChannelAPI
import ChannelSupport

extension RelayDelivery {
    /// The same facility delivering through the channel `name` instead of the relay's `channel:` (a
    /// protocol that picks its channel per request, like the Home Assistant forwarder by app id).
    public func through(_ name: String) -> RelayDelivery {
        RelayDelivery(
            channelName: name, clock: clock, channel: channel, stateStore: stateStore, newId: newId,
            countPush: countPush, gate: gate)
    }

    /// The payload form of the channel it delivers through; nil when that channel is missing or cannot
    /// send prepared pushes.
    public var kind: PreparedPushKind? { (channel(channelName) as? any PreparedPushSending)?.preparedKind }

    /// A fresh id (a message id when the provider gave none).
    func freshId() -> String { newId() }
}
