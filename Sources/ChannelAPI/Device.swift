/// A registered device (contract §3): where one person can be reached on one platform.
///
/// The upsert key is `(namespace, deviceId, platform)`. Platform-specific fields are kept as JSON
/// in ``fields``; the channel module that serves the platform declares them in a
/// ``PlatformDescriptor`` (checked by ``ChannelRegistry/validate(_:)``), and the channel may
/// normalise them further (``Channel/validateRegistration(_:)``).
public struct Device: Sendable, Equatable {
    /// Namespace; `default` when absent.
    public var namespace: String
    /// Client-chosen id, 1-128 characters, stable across re-registrations.
    public var deviceId: String
    /// Platform name, as a channel module declares it (``PlatformDescriptor/name``).
    public var platform: String
    /// Every other field of the registration JSON.
    public var fields: [String: JSONValue]
    /// The address that makes this device unique at its provider (the push token, the Web Push
    /// endpoint, `telegram:<chat id>`, …), derived from ``fields`` by the platform's descriptor
    /// (``PlatformDescriptor/address(of:)``) when the router validates the registration, and stored
    /// with it. Registering another device with the same address in the namespace moves it ("the
    /// token moves"); unregister-by-token removes by it. Not part of equality: it follows from the fields.
    public var address: String?
    /// Whether ``address`` is a secret that proves the registrant holds the device (a push token, a
    /// Web Push endpoint), as its platform's descriptor declares (``PlatformDescriptor/addressIsSecret``);
    /// set with ``address`` by the router. An address that is not (a Telegram chat id, a relay's
    /// device id) never moves a registration of another namespace. Not part of equality.
    public var addressIsSecret = true
    /// The namespaces (exact names, or a prefix before a trailing `*`) whose registrations of the
    /// same address this registration may move; nil: any namespace (the CLI, an embedding app). The
    /// HTTP API sets the caller's token's namespaces. A registration holding the same secret address
    /// in a namespace outside them refuses this one (``AddressConflict``) and is left as it is.
    /// Not part of equality.
    public var movableNamespaces: [String]?

    /// Creates a device.
    public init(
        namespace: String = "default", deviceId: String, platform: String, fields: [String: JSONValue] = [:],
        address: String? = nil
    ) {
        self.namespace = namespace
        self.deviceId = deviceId
        self.platform = platform
        self.fields = fields
        self.address = address
    }

    /// Same namespace, id, platform and fields (``address`` is derived from them).
    public static func == (a: Device, b: Device) -> Bool {
        a.namespace == b.namespace && a.deviceId == b.deviceId && a.platform == b.platform && a.fields == b.fields
    }

    /// A string field, or nil.
    public func string(_ name: String) -> String? { fields[name]?.stringValue }

    /// The push token (`token` field), if any.
    public var token: String? { string("token") }

    /// Field names whose values are secrets on every platform: never logged, never listed. A
    /// platform adds its own (``PlatformDescriptor/secretFields``).
    public static let secretFields: Set<String> = ["pushKey", "secret", "auth", "p256dh", "token", "endpoint"]

    /// The registration as JSON with every secret redacted (for listings): the common ``secretFields``
    /// and `extraSecretFields` (the platform's own, from its descriptor). A push token or endpoint is
    /// shortened so devices can be told apart; every other secret is `‹redacted›`
    /// (``Redaction/field(_:_:)``).
    public func redactedJSON(extraSecretFields: Set<String> = []) -> JSONValue {
        let names = Device.secretFields.union(extraSecretFields)
        var o = Device.redact(.object(fields), names: names).objectValue ?? [:]
        o["namespace"] = .string(namespace)
        o["deviceId"] = .string(deviceId)
        o["platform"] = .string(platform)
        return .object(o)
    }

    /// The registration as JSON, secrets included (for storage only).
    public var json: JSONValue {
        var o = fields
        o["namespace"] = .string(namespace)
        o["deviceId"] = .string(deviceId)
        o["platform"] = .string(platform)
        return .object(o)
    }

    /// The registration as JSON with the common ``secretFields`` redacted.
    public var redactedJSON: JSONValue { redactedJSON() }

    /// The values of every secret field (the common ``secretFields`` and `extraSecretFields`, at any
    /// depth), for scrubbing them from provider answers before they are stored or printed.
    public func secretValues(extraSecretFields: Set<String> = []) -> [String] {
        let names = Device.secretFields.union(extraSecretFields)
        var out: [String] = []
        func walk(_ o: [String: JSONValue]) {
            for (k, v) in o {
                if names.contains(k), let s = v.stringValue {
                    out.append(s)
                } else if let nested = v.objectValue {
                    walk(nested)
                }
            }
        }
        walk(fields)
        return out
    }

    /// The values of the common secret fields.
    public var secretValues: [String] { secretValues() }

    static func redact(_ value: JSONValue, names: Set<String>) -> JSONValue {
        guard case .object(let o) = value else { return value }
        var out: [String: JSONValue] = [:]
        for (k, v) in o {
            if names.contains(k), let s = v.stringValue {
                out[k] = .string(Redaction.field(k, s))
            } else {
                out[k] = redact(v, names: names)
            }
        }
        return .object(out)
    }
}

extension Device {
    /// Parses registration JSON: the generic fields (`namespace`, `deviceId`, `platform`) are checked
    /// here; the platform's own fields are checked by its descriptor when the device is registered
    /// (``ChannelRegistry/validate(_:)``, or ``ChannelRegistry/device(json:)`` to do both at once).
    public init(json: JSONValue) throws(ValidationError) {
        guard var o = json.objectValue else { throw ValidationError(field: "device", "must be a JSON object") }
        func take(_ key: String) throws(ValidationError) -> String? {
            guard let v = o.removeValue(forKey: key), !v.isNull else { return nil }
            guard let s = v.stringValue else {
                throw ValidationError(field: key, "must be a string, not \(v.kindName)")
            }
            return s
        }
        let namespace = try take("namespace") ?? "default"
        try HeraldNotification.validateName(namespace, field: "namespace")
        guard let deviceId = try take("deviceId"), !deviceId.isEmpty else {
            throw ValidationError(field: "deviceId", "required (1-128 characters)")
        }
        guard deviceId.count <= 128, !deviceId.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw ValidationError(field: "deviceId", "must be 1-128 characters without control characters")
        }
        guard let platform = try take("platform") else { throw ValidationError(field: "platform", "required") }
        try HeraldNotification.validateName(platform, field: "platform")
        self.init(namespace: namespace, deviceId: deviceId, platform: platform, fields: o)
    }

    /// Parses registration JSON text (generic fields only, as ``init(json:)``).
    public init(jsonText: String) throws(ValidationError) {
        let value: JSONValue
        do { value = try JSONValue.parse(jsonText) } catch { throw ValidationError(field: "device", error.description) }
        try self.init(json: value)
    }
}

extension Device {
    /// Checks a device built in code against the generic rules of ``init(json:)``.
    public static func validate(_ device: Device) throws(ValidationError) {
        let parsed = try Device(json: device.json)
        guard parsed.namespace == device.namespace, parsed.deviceId == device.deviceId else {
            throw ValidationError(field: "device", "fields must not contain namespace, deviceId or platform")
        }
    }
}

/// What a registration does to another registration holding the same address (``Device/address``):
/// the pure rule both stores apply inside the upsert's transaction.
public enum AddressClaim: Sendable, Equatable {
    /// The other registration is removed ("the token moves").
    case move
    /// Both stay: the address is no secret, so it proves nothing about who holds the device.
    case keep
    /// The registration is refused: the address is a secret held in a namespace the registrant does
    /// not cover.
    case refuse

    /// The claim of `device` on a registration of the same address in `namespace`: its own
    /// namespace's always move; another namespace's move when the address is a secret and the
    /// registrant covers that namespace, stay when the address is no secret, and refuse otherwise.
    public static func of(_ device: Device, on namespace: String) -> AddressClaim {
        if namespace == device.namespace { return .move }
        guard device.addressIsSecret else { return .keep }
        guard let allowed = device.movableNamespaces else { return .move }
        let covered = allowed.contains { p in p.hasSuffix("*") ? namespace.hasPrefix(p.dropLast()) : p == namespace }
        return covered ? .move : .refuse
    }
}

/// A registration's key: namespace, device id, platform.
public struct DeviceKey: Sendable, Hashable {
    /// The namespace.
    public var namespace: String
    /// The device id.
    public var deviceId: String
    /// The platform.
    public var platform: String

    /// Creates a key.
    public init(namespace: String, deviceId: String, platform: String) {
        self.namespace = namespace
        self.deviceId = deviceId
        self.platform = platform
    }

    /// `namespace/deviceId/platform`, as `moved` lists it.
    public var path: String { "\(namespace)/\(deviceId)/\(platform)" }
}

extension AddressClaim {
    /// The registrations among `others` (holding `device`'s address) that `device` moves, decided
    /// before anything is written; throws ``AddressConflict`` when one refuses it.
    public static func moves(of device: Device, among others: [DeviceKey]) throws(AddressConflict) -> [DeviceKey] {
        var moving: [DeviceKey] = []
        for other in others {
            switch of(device, on: other.namespace) {
            case .move: moving.append(other)
            case .keep: continue
            case .refuse: throw AddressConflict(deviceId: device.deviceId)
            }
        }
        return moving
    }
}

/// A registration refused because its address is held by a registration in a namespace the
/// registrant does not cover (``AddressClaim/refuse``). It names nothing of that registration.
public struct AddressConflict: Error, Sendable, Equatable, CustomStringConvertible {
    /// The refused registration's device id (the registrant's own).
    public let deviceId: String

    /// Creates the error.
    public init(deviceId: String) { self.deviceId = deviceId }

    /// What the registrant is told.
    public var description: String {
        "device \(deviceId): its push address is registered in a namespace this registration may not change; "
            + "remove it there, or register with a token that covers both namespaces"
    }
}
