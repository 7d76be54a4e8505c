import APNsChannel
import ChannelAPI
import ExecChannel
import FCMChannel
import RelayChannel
import SinkChannels
import TelegramChannel
import WebPushChannel

/// Every built-in channel module, registered in one call.
///
/// ```swift
/// var registry = HeraldChannels.registry
/// registry.register(MyChannel.factory)   // a plugin adds its own type
/// ```
public enum HeraldChannels {
    /// The built-in factories.
    public static let factories: [ChannelFactory] = [
        LogChannel.factory, WebhookChannel.factory, TelegramChannel.factory, WebPushChannel.factory, FCMChannel.factory,
        APNsChannel.factory, RelayChannel.factory, ExecChannel.factory,
    ]

    /// A registry holding every built-in factory (and the platforms they declare).
    public static let registry = ChannelRegistry(factories)
}
