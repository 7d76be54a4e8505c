import HeraldCrypto

/// A registered device (contract §3): where one person can be reached on one platform.
///
/// The upsert key is `(namespace, deviceId, platform)`. Platform-specific fields are kept as JSON
/// in ``fields`` and read through the typed accessors; the channel that serves the platform
/// validates them further (``Channel/validateRegistration(_:)``).
public struct Device: Sendable, Equatable {
    /// Namespace; `default` when absent.
    public var namespace: String
    /// Client-chosen id, 1-128 characters, stable across re-registrations.
    public var deviceId: String
    /// Platform name: `phone`, `wear`, `ios`, `web`, `telegram`, `pulse`, `mobile-app`, or a plugin's own.
    public var platform: String
    /// Every other field of the registration JSON.
    public var fields: [String: JSONValue]

    /// Creates a device.
    public init(namespace: String = "default", deviceId: String, platform: String, fields: [String: JSONValue] = [:]) {
        self.namespace = namespace
        self.deviceId = deviceId
        self.platform = platform
        self.fields = fields
    }

    /// A string field, or nil.
    public func string(_ name: String) -> String? { fields[name]?.stringValue }

    /// The push token (`token` field), if any.
    public var token: String? { string("token") }

    /// The address that makes this device unique at its provider, used to move a token between
    /// namespaces: the token, the Web Push endpoint, the chat id, or the relay device id.
    public var address: String? {
        if let t = token { return t }
        if let e = fields["subscription"]?["endpoint"]?.stringValue { return e }
        if let c = chatIdString { return "telegram:\(c)" }
        if let r = string("relayDeviceId") { return "pulse:\(r)" }
        return nil
    }

    /// `chatId` as text (Telegram ids may be numbers or `@channel` names).
    public var chatIdString: String? {
        switch fields["chatId"] {
        case .string(let s): return s
        case .number: return fields["chatId"]?.intValue.map(String.init)
        default: return nil
        }
    }

    /// Field names whose values are secrets: never logged, never listed.
    public static let secretFields: Set<String> = ["pushKey", "secret", "auth", "p256dh", "token", "endpoint"]

    /// The registration as JSON with every secret replaced by a short redacted form (for listings).
    public var redactedJSON: JSONValue {
        var o = Device.redact(.object(fields)).objectValue ?? [:]
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

    /// The values of every secret field (``secretFields``, at any depth), for scrubbing them from
    /// provider answers before they are stored or printed.
    public var secretValues: [String] {
        var out: [String] = []
        func walk(_ o: [String: JSONValue]) {
            for (k, v) in o {
                if Device.secretFields.contains(k), let s = v.stringValue {
                    out.append(s)
                } else if let nested = v.objectValue {
                    walk(nested)
                }
            }
        }
        walk(fields)
        return out
    }

    static func redact(_ value: JSONValue) -> JSONValue {
        guard case .object(let o) = value else { return value }
        var out: [String: JSONValue] = [:]
        for (k, v) in o {
            if secretFields.contains(k), let s = v.stringValue {
                out[k] = .string(Redaction.mask(s))
            } else {
                out[k] = redact(v)
            }
        }
        return .object(out)
    }
}

extension Device {
    /// Parses and validates registration JSON against the platform table of contract §3.
    /// Unknown platforms (plugin channels) are accepted with their fields as given.
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
        try Notification.validateName(namespace, field: "namespace")
        guard let deviceId = try take("deviceId"), !deviceId.isEmpty else {
            throw ValidationError(field: "deviceId", "required (1-128 characters)")
        }
        guard deviceId.count <= 128, !deviceId.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw ValidationError(field: "deviceId", "must be 1-128 characters without control characters")
        }
        guard let platform = try take("platform") else { throw ValidationError(field: "platform", "required") }
        try Notification.validateName(platform, field: "platform")
        try Device.validateFields(platform: platform, o)
        self.init(namespace: namespace, deviceId: deviceId, platform: platform, fields: o)
    }

    /// Parses registration JSON text.
    public init(jsonText: String) throws(ValidationError) {
        let value: JSONValue
        do { value = try JSONValue.parse(jsonText) } catch { throw ValidationError(field: "device", error.description) }
        try self.init(json: value)
    }

    static func validateFields(platform: String, _ o: [String: JSONValue]) throws(ValidationError) {
        func allow(_ names: Set<String>) throws(ValidationError) {
            for k in o.keys.sorted() where !names.contains(k) {
                throw ValidationError(field: k, "unknown field for platform \(platform)")
            }
        }
        func requireString(_ k: String, max: Int = 4096) throws(ValidationError) -> String {
            guard let v = o[k] else { throw ValidationError(field: k, "required for platform \(platform)") }
            guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= max else {
                throw ValidationError(field: k, "must be a non-empty string of at most \(max) bytes")
            }
            return s
        }
        func optionalString(_ k: String) throws(ValidationError) {
            if let v = o[k], !v.isNull, v.stringValue == nil { throw ValidationError(field: k, "must be a string") }
        }
        switch platform {
        case "phone", "wear":
            try allow(["token", "pushKey"])
            _ = try requireString("token")
            if o["pushKey"] != nil { try validatePushKey(o["pushKey"], urlSafe: false) }
        case "ios":
            try allow(["token", "pushKey", "environment"])
            let token = try requireString("token", max: 200)
            guard token.count % 2 == 0, token.allSatisfy({ $0.isHexDigit }) else {
                throw ValidationError(field: "token", "must be the device token in hex")
            }
            if o["pushKey"] != nil { try validatePushKey(o["pushKey"], urlSafe: false) }
            if let env = o["environment"] {
                guard let e = env.stringValue, ["production", "sandbox"].contains(e) else {
                    throw ValidationError(field: "environment", "must be production or sandbox")
                }
            }
        case "web":
            try allow(["subscription", "vapidKeyId"])
            try optionalString("vapidKeyId")
            guard let sub = o["subscription"]?.objectValue else {
                throw ValidationError(field: "subscription", "required object {endpoint, keys: {p256dh, auth}}")
            }
            guard let endpoint = sub["endpoint"]?.stringValue, endpoint.hasPrefix("https://") else {
                throw ValidationError(field: "subscription.endpoint", "required https URL")
            }
            _ = endpoint
            guard let keys = sub["keys"]?.objectValue else {
                throw ValidationError(field: "subscription.keys", "required object")
            }
            guard keys["p256dh"]?.stringValue != nil else {
                throw ValidationError(field: "subscription.keys.p256dh", "required string")
            }
            guard keys["auth"]?.stringValue != nil else {
                throw ValidationError(field: "subscription.keys.auth", "required string")
            }
        case "telegram":
            try allow(["chatId"])
            switch o["chatId"] {
            case .string(let s) where !s.isEmpty: break
            case .number where o["chatId"]?.intValue != nil: break
            default: throw ValidationError(field: "chatId", "required: a chat id number or @channelname string")
            }
        case "pulse":
            try allow(["relay", "relayDeviceId", "sourceId", "pushKey", "deviceName"])
            _ = try requireString("relay")
            _ = try requireString("relayDeviceId", max: 256)
            _ = try requireString("sourceId", max: 256)
            try validatePushKey(o["pushKey"], urlSafe: true)
            try optionalString("deviceName")
        case "mobile-app":
            try allow(["pushUrl", "token", "registrationInfo", "secret"])
            guard let url = o["pushUrl"]?.stringValue, url.hasPrefix("https://") else {
                throw ValidationError(field: "pushUrl", "required https URL")
            }
            _ = url
            _ = try requireString("token")
            guard let info = o["registrationInfo"]?.objectValue else {
                throw ValidationError(field: "registrationInfo", "required object {appId, appVersion, osVersion}")
            }
            for k in ["appId", "appVersion", "osVersion"] where info[k]?.stringValue == nil {
                throw ValidationError(field: "registrationInfo.\(k)", "required string")
            }
            if o["secret"] != nil { try validateHomeAssistantSecret(o["secret"]) }
        default:
            break
        }
    }

    /// A Home Assistant registration `secret` is exactly 64 hex characters (32 bytes once hex-decoded),
    /// as HA's `secrets.token_hex(32)` creates it.
    static func validateHomeAssistantSecret(_ v: JSONValue?) throws(ValidationError) {
        guard let s = v?.stringValue, s.utf8.count == 64, s.utf8.allSatisfy(\.isASCIIHexDigit) else {
            throw ValidationError(
                field: "secret", "must be the Home Assistant registration secret: exactly 64 hex characters (32 bytes)")
        }
    }

    /// A pushKey is base64 (or base64url for Pulse) of exactly 32 bytes.
    static func validatePushKey(_ v: JSONValue?, urlSafe: Bool, field: String = "pushKey") throws(ValidationError) {
        guard let s = v?.stringValue else {
            throw ValidationError(field: field, "required: base64 of exactly 32 bytes")
        }
        let decoded = urlSafe ? try? Base64.urlDecode(s) : try? Base64.decode(s)
        guard let bytes = decoded, bytes.count == 32 else {
            throw ValidationError(field: field, "must be \(urlSafe ? "base64url" : "base64") of exactly 32 bytes")
        }
    }
}

extension Device {
    /// Checks a device built in code against the same rules as ``init(json:)``.
    public static func validate(_ device: Device) throws(ValidationError) {
        let parsed = try Device(json: device.json)
        guard parsed.namespace == device.namespace, parsed.deviceId == device.deviceId else {
            throw ValidationError(field: "device", "fields must not contain namespace, deviceId or platform")
        }
    }
}

extension UInt8 {
    /// `0-9`, `a-f` or `A-F` in ASCII.
    fileprivate var isASCIIHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}
