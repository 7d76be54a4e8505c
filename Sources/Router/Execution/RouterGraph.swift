import ChannelAPI
import HeraldHTTP

/// A loaded config with its channel instances: the immutable unit that a reload swaps.
/// In-flight deliveries keep the graph they started with.
final class RouterGraph: Sendable {
    let config: HeraldConfig
    let channels: [String: any Channel]

    init(config: HeraldConfig, channels: [String: any Channel]) {
        self.config = config
        self.channels = channels
    }

    /// Builds every channel through its factory; channel-specific config errors surface here.
    static func build(
        config: HeraldConfig, registry: ChannelRegistry, http: any HTTPTransport, clock: any HeraldClock,
        random: any RandomSource, logSink: any LogSink, store: any HeraldStore,
        localStreams: (any LocalStreams)? = nil
    ) throws(ConfigError) -> RouterGraph {
        var channels: [String: any Channel] = [:]
        for spec in config.channels {
            guard let factory = registry.factory(for: spec.type) else {
                throw spec.node.error("unknown channel type '\(spec.type)'")
            }
            let channelConfig = try ChannelConfig(
                name: spec.name, node: spec.node, ignoring: ConfigLoader.commonChannelKeys, allowHosts: spec.allowHosts)
            let context = ChannelContext(
                name: spec.name, http: http, clock: clock, random: random,
                logger: ChannelLogger(source: spec.name, sink: logSink, clock: clock),
                state: store.channelState(spec.name), localStreams: localStreams)
            let channel = try factory.make(channelConfig, context)
            try channelConfig.finish()
            channels[spec.name] = SecretScrubbingChannel(
                inner: channel, configSecrets: channelConfig.secrets, registry: registry)
        }
        return RouterGraph(config: config, channels: channels)
    }

    func spec(_ name: String) -> ChannelSpec? { config.channel(name) }
}
