import APNsChannel
import ChannelAPI
import Router
import SinkChannels

/// Every built-in channel module, registered in one call.
///
/// ```swift
/// var registry = HeraldChannels.registry
/// registry.register(MyChannel.factory)   // a plugin adds its own type
/// ```
public enum HeraldChannels {
    /// The built-in factories: log, webhook (more as channel modules land).
    public static let factories: [ChannelFactory] = [LogChannel.factory, WebhookChannel.factory, APNsChannel.factory]

    /// A registry holding every built-in factory.
    public static var registry: ChannelRegistry { ChannelRegistry(factories) }
}
