/// The channel factories a router knows, by `type:` name, and the platforms their modules declare.
/// Built-in channels register themselves through `HeraldChannels`; a plugin adds its own factory
/// with ``register(_:)``.
public struct ChannelRegistry: Sendable {
    private(set) var factories: [String: ChannelFactory] = [:]
    private var descriptors: [String: PlatformDescriptor] = [:]

    /// An empty registry.
    public init() {}

    /// A registry holding `factories`.
    public init(_ factories: [ChannelFactory]) {
        for f in factories { register(f) }
    }

    /// Adds (or replaces) the factory for its `type`, and the platforms it declares (a later
    /// declaration of the same platform name replaces the earlier one).
    public mutating func register(_ factory: ChannelFactory) {
        factories[factory.type] = factory
        for p in factory.platforms { descriptors[p.name] = p }
    }

    /// Adds (or replaces) a platform declaration without a factory: for a registry whose factories
    /// serve platforms another module declares (a test double standing in for a built-in channel).
    public mutating func register(platform: PlatformDescriptor) {
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
