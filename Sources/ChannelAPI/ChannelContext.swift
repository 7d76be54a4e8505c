/// What the router lends a channel: an HTTP client, a clock, randomness, a redacting logger and a
/// persistent key/value state area of its own.
public struct ChannelContext: Sendable {
    /// The channel's name in the config.
    public let name: String
    /// The shared HTTP transport (in production HeraldHTTP's libcurl client; in tests a fake).
    public let http: any HTTPTransport
    /// The injected clock.
    public let clock: any HeraldClock
    /// The injected random source.
    public let random: any RandomSource
    /// A logger that redacts secrets.
    public let logger: ChannelLogger
    /// The channel's persistent state.
    public let state: any ChannelStateStore
    /// The apps' open streams (the `local` channel); nil where nothing holds streams.
    public let localStreams: (any LocalStreams)?

    /// Creates a context.
    public init(
        name: String, http: any HTTPTransport, clock: any HeraldClock, random: any RandomSource, logger: ChannelLogger,
        state: any ChannelStateStore, localStreams: (any LocalStreams)? = nil
    ) {
        self.name = name
        self.http = http
        self.clock = clock
        self.random = random
        self.logger = logger
        self.state = state
        self.localStreams = localStreams
    }
}

/// Builds a channel from its config node, registered under a `type:` name.
public struct ChannelFactory: Sendable {
    /// The `type:` name (`apns`, `webhook`, `ntfy`, …).
    public let type: String
    /// Platforms this channel serves when the config gives no `platforms:`; empty for sinks (log,
    /// webhook), which get one delivery per notification with no device.
    public let defaultPlatforms: [String]
    /// The platforms this module declares: their fields, secret fields and address (see
    /// ``PlatformDescriptor``). A platform served but not declared here may be declared by another
    /// module; a platform no module declares is accepted with its fields as given.
    public let platforms: [PlatformDescriptor]
    /// Builds the channel. Reads its keys from the config and must not do network I/O. The caller
    /// (the router's graph, or a test) calls ``ChannelConfig/finish()`` after `make` returns, which
    /// refuses every key the factory did not read; a factory need not call it itself.
    public let make: @Sendable (ChannelConfig, ChannelContext) throws(ConfigError) -> any Channel

    /// Narrows ``defaultPlatforms`` for one configured channel from its plain keys, for a type whose
    /// platform depends on a key (a `relay` serves only its `protocol`'s platform). Given a lookup of
    /// the channel's scalar values by key; nil keeps ``defaultPlatforms``.
    public let platformsForConfig: (@Sendable (_ value: (String) -> String?) -> [String]?)?

    /// Creates a factory.
    /// - Parameters:
    ///   - type: The `type:` name.
    ///   - defaultPlatforms: The platforms served when the config gives no `platforms:`.
    ///   - platforms: The platforms this module declares.
    ///   - platformsForConfig: Optionally, the platforms one channel serves by default, from its keys.
    ///   - make: Builds the channel.
    public init(
        type: String, defaultPlatforms: [String], platforms: [PlatformDescriptor] = [],
        platformsForConfig: (@Sendable (_ value: (String) -> String?) -> [String]?)? = nil,
        make: @escaping @Sendable (ChannelConfig, ChannelContext) throws(ConfigError) -> any Channel
    ) {
        self.type = type
        self.defaultPlatforms = defaultPlatforms
        self.platforms = platforms
        self.platformsForConfig = platformsForConfig
        self.make = make
    }

    /// Whether this is a sink channel (no devices).
    public var isSink: Bool { defaultPlatforms.isEmpty }
}
