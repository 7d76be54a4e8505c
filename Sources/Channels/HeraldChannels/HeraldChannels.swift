import APNsChannel
import ChannelAPI
import ExecChannel
import FCMChannel
import LocalChannel
import RelayChannel
import SinkChannels
import TelegramChannel
import WebPushChannel

/// Every built-in channel module, registered in one call.
///
/// ```swift
/// var registry = HeraldChannels.registry
/// try registry.register(MyChannel.factory)   // a plugin adds its own type; a taken name throws
/// ```
public enum HeraldChannels {
    /// The built-in factories.
    public static let factories: [ChannelFactory] = [
        LogChannel.factory, WebhookChannel.factory, TelegramChannel.factory, WebPushChannel.factory, FCMChannel.factory,
        APNsChannel.factory, RelayChannel.factory, ExecChannel.factory, LocalChannel.factory,
    ]

    /// A registry holding every built-in factory (and the platforms they declare).
    /// (The built-in types and platforms are distinct; `RegistryTests` checks that the list registers.)
    public static let registry = (try? ChannelRegistry(factories)) ?? ChannelRegistry()
}
