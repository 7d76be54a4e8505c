/// The channel factories a router knows, by `type:` name, and the platforms their modules declare.
/// Built-in channels register themselves through `HeraldChannels`; a plugin adds its own factory
/// with ``register(_:)``.
public struct ChannelRegistry: Sendable {
    private(set) var factories: [String: ChannelFactory] = [:]
    private var descriptors: [String: PlatformDescriptor] = [:]

    /// An empty registry.
    public init() {}

    /// A registry holding `factories`; throws when two of them have one `type:` name or declare one
    /// platform.
    public init(_ factories: [ChannelFactory]) throws(RegistryConflict) {
        for f in factories { try register(f) }
    }

    /// A registry holding one factory (one factory cannot conflict with itself).
    public init(_ factory: ChannelFactory) {
        factories[factory.type] = factory
        for p in factory.platforms { descriptors[p.name] = p }
    }

    /// Adds the factory for its `type`, and the platforms it declares. Refuses a type or a platform
    /// already registered (a plugin never replaces a built-in silently): nothing is added then.
    public mutating func register(_ factory: ChannelFactory) throws(RegistryConflict) {
        if factories[factory.type] != nil { throw RegistryConflict(kind: .type, name: factory.type) }
        if let taken = factory.platforms.first(where: { descriptors[$0.name] != nil }) {
            throw RegistryConflict(kind: .platform, name: taken.name)
        }
        factories[factory.type] = factory
        for p in factory.platforms { descriptors[p.name] = p }
    }

    /// Adds a platform declaration without a factory: for a registry whose factories serve platforms
    /// another module declares (a test double standing in for a built-in channel). Refuses a platform
    /// already declared.
    public mutating func register(platform: PlatformDescriptor) throws(RegistryConflict) {
        if descriptors[platform.name] != nil { throw RegistryConflict(kind: .platform, name: platform.name) }
        descriptors[platform.name] = platform
    }

    /// The factory for `type`.
    public func factory(for type: String) -> ChannelFactory? { factories[type] }

    /// Registered type names, sorted.
    public var types: [String] { factories.keys.sorted() }

    /// The descriptor of `platform`, when a registered module declares it.
    public func platform(_ platform: String) -> PlatformDescriptor? { descriptors[platform] }

    /// Every declared platform, sorted by name.
    public var platforms: [PlatformDescriptor] { descriptors.values.sorted { $0.name < $1.name } }

    /// Checks `device` (generic rules, then its platform's descriptor) and returns it with its
    /// ``Device/address`` derived. A platform no module declares keeps its fields as given, and its
    /// `token` field (if any) is its address.
    public func validate(_ device: Device) throws(ValidationError) -> Device {
        try Device.validate(device)
        try descriptors[device.platform]?.validate(device)
        var checked = device
        checked.address = address(of: device)
        return checked
    }

    /// The address of `device` (``Device/address``): its platform descriptor's, or for a platform no
    /// module declares, its `token` field.
    public func address(of device: Device) -> String? {
        guard let descriptor = descriptors[device.platform] else { return device.token }
        return descriptor.address(of: device)
    }

    /// Whether `device`'s address is a secret (``PlatformDescriptor/addressIsSecret``); a platform no
    /// module declares addresses by its `token`, a secret.
    public func addressIsSecret(of device: Device) -> Bool {
        descriptors[device.platform]?.addressIsSecret ?? true
    }

    /// Parses and checks registration JSON (``Device/init(json:)``, then ``validate(_:)``).
    public func device(json: JSONValue) throws(ValidationError) -> Device {
        try validate(Device(json: json))
    }

    /// Parses and checks registration JSON text.
    public func device(jsonText: String) throws(ValidationError) -> Device {
        try validate(Device(jsonText: jsonText))
    }

    /// The secret field names of `platform`: the common ``Device/secretFields`` and its descriptor's.
    public func secretFields(of platform: String) -> Set<String> {
        Device.secretFields.union(descriptors[platform]?.secretFields ?? [])
    }

    /// `device` as JSON with every secret of its platform redacted (for listings).
    public func redactedJSON(of device: Device) -> JSONValue {
        device.redactedJSON(extraSecretFields: descriptors[device.platform]?.secretFields ?? [])
    }

    /// The values of every secret field of `device`'s platform.
    public func secretValues(of device: Device) -> [String] {
        device.secretValues(extraSecretFields: descriptors[device.platform]?.secretFields ?? [])
    }
}

/// A second registration of a channel type or platform name (``ChannelRegistry/register(_:)``).
public struct RegistryConflict: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is registered twice.
    public enum Kind: String, Sendable {
        /// A `type:` name.
        case type
        /// A platform name.
        case platform
    }

    /// What is registered twice.
    public var kind: Kind
    /// Its name.
    public var name: String

    /// Creates a conflict.
    public init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }

    /// `channel type 'ntfy' is already registered`.
    public var description: String {
        kind == .type
            ? "channel type '\(name)' is already registered"
            : "platform '\(name)' is already declared by another module"
    }
}
