import ChannelAPI

/// The channel factories a router knows, by `type:` name. Built-in channels register themselves
/// through `HeraldChannels`; a plugin adds its own factory with ``register(_:)``.
public struct ChannelRegistry: Sendable {
    private(set) var factories: [String: ChannelFactory] = [:]

    /// An empty registry.
    public init() {}

    /// A registry holding `factories`.
    public init(_ factories: [ChannelFactory]) {
        for f in factories { register(f) }
    }

    /// Adds (or replaces) the factory for its `type`.
    public mutating func register(_ factory: ChannelFactory) {
        factories[factory.type] = factory
    }

    /// The factory for `type`.
    public func factory(for type: String) -> ChannelFactory? { factories[type] }

    /// Registered type names, sorted.
    public var types: [String] { factories.keys.sorted() }
}
