/// What a platform's device registrations look like, declared by the channel module that serves
/// the platform and registered with its ``ChannelFactory`` (``ChannelFactory/platforms``).
///
/// The router uses it for every device of the platform: ``validate(_:)`` checks the fields once
/// before the device is stored, ``address(of:)`` gives the address that "the token moves" and
/// unregister-by-token use, and ``secretFields`` are redacted in listings and scrubbed from
/// delivery results (on top of ``Device/secretFields``).
///
/// ```swift
/// static let platform = PlatformDescriptor(
///     name: "ntfy", secretFields: ["topic"], address: { $0.string("topic").map { "ntfy:\($0)" } },
///     validate: { fields throws(ValidationError) in
///         try fields.allow(["topic"])
///         try fields.requireString("topic", max: 64)
///     })
/// ```
public struct PlatformDescriptor: Sendable {
    /// The platform name devices register with (`platform:`).
    public let name: String
    /// Field names of this platform whose values are secrets (at any depth), beyond the common
    /// ``Device/secretFields``.
    public let secretFields: Set<String>
    /// Whether the address (``address(of:)``) is a secret only the device's holder knows (a push
    /// token, a Web Push endpoint). When it is not (a Telegram chat id is a public user id), a
    /// registration never moves another namespace's registration of the same address.
    public let addressIsSecret: Bool
    private let check: @Sendable (PlatformFields) throws(ValidationError) -> Void
    private let derive: @Sendable (Device) -> String?

    /// Creates a descriptor.
    /// - Parameters:
    ///   - name: The platform name.
    ///   - secretFields: The platform's secret field names.
    ///   - address: The device's address at its provider, from its fields; nil when it has none.
    ///   - addressIsSecret: Whether that address is a secret (default true; false for a public id).
    ///   - validate: Checks the registration's platform fields; throws the first problem.
    public init(
        name: String, secretFields: Set<String> = [], address: @escaping @Sendable (Device) -> String?,
        addressIsSecret: Bool = true, validate: @escaping @Sendable (PlatformFields) throws(ValidationError) -> Void
    ) {
        self.name = name
        self.secretFields = secretFields
        self.addressIsSecret = addressIsSecret
        self.derive = address
        self.check = validate
    }

    /// Checks `device`'s fields against the platform's rules.
    public func validate(_ device: Device) throws(ValidationError) {
        try check(PlatformFields(platform: name, values: device.fields))
    }

    /// The device's address (see ``Device/address``).
    public func address(of device: Device) -> String? { derive(device) }
}

/// A registration's platform fields with the checks descriptors share; every failure is a
/// ``ValidationError`` naming the field.
public struct PlatformFields: Sendable {
    /// The platform, for messages.
    public let platform: String
    /// The fields (everything but `namespace`, `deviceId` and `platform`).
    public let values: [String: JSONValue]

    /// Wraps `values`.
    public init(platform: String, values: [String: JSONValue]) {
        self.platform = platform
        self.values = values
    }

    /// The value of `name`, or nil.
    public subscript(name: String) -> JSONValue? { values[name] }

    /// Refuses any field not in `names` (the first in sorted order is named).
    public func allow(_ names: Set<String>) throws(ValidationError) {
        for k in values.keys.sorted() where !names.contains(k) {
            throw ValidationError(field: k, "unknown field for platform \(platform)")
        }
    }

    /// A required non-empty string of at most `max` UTF-8 bytes.
    @discardableResult
    public func requireString(_ name: String, max: Int = 4096) throws(ValidationError) -> String {
        guard let v = values[name] else { throw ValidationError(field: name, "required for platform \(platform)") }
        guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= max else {
            throw ValidationError(field: name, "must be a non-empty string of at most \(max) bytes")
        }
        return s
    }

    /// An optional string: absent, null or a string.
    public func optionalString(_ name: String) throws(ValidationError) {
        if let v = values[name], !v.isNull, v.stringValue == nil {
            throw ValidationError(field: name, "must be a string")
        }
    }
}
