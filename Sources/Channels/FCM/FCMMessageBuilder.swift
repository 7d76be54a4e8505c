import ChannelAPI
import ChannelSupport
import HeraldCrypto

/// `display:` — whether FCM shows a notification itself or the app gets data only.
public enum FCMDisplay: String, Sendable, CaseIterable {
    /// Data-only messages (the default; hapi's app needs them to reach its handler).
    case data
    /// Adds a `notification` block {title, body}; FCM displays it when the app is in the background.
    case notification
}

/// `encryption:` — the end-to-end option.
public enum FCMEncryption: String, Sendable, CaseIterable {
    /// Plain data map.
    case none
    /// hapi's AES-256-GCM envelope `{"v":"1","e":…}` for devices that registered a `pushKey`.
    case hapiV1 = "hapi-v1"
}

/// Builds FCM HTTP v1 send bodies. Pure: no I/O; randomness (the nonce) is passed in.
public struct FCMMessageBuilder: Sendable {
    /// The most bytes of data payload FCM accepts for a token message.
    public static let maximumPayloadBytes = 4096
    /// The data key carrying the delivery id (stable across retries; the app can de-duplicate on it).
    public static let deliveryIdKey = "heraldDeliveryId"
    /// Data keys FCM reserves (exact names).
    public static let reservedKeys: Set<String> = ["from", "notification", "message_type"]
    /// Data key prefixes FCM reserves.
    public static let reservedPrefixes = ["google", "gcm"]

    /// The display mode.
    public var display: FCMDisplay
    /// The encryption mode.
    public var encryption: FCMEncryption

    /// Creates a builder.
    public init(display: FCMDisplay = .data, encryption: FCMEncryption = .none) {
        self.display = display
        self.encryption = encryption
    }

    /// What is common to every device of one notification, computed once per batch.
    public struct Prepared: Sendable {
        /// The plain data map without the delivery id: hapi's keys over `notification.data`.
        public var data: [String: String]
        /// `android` members except `direct_boot_ok` (which depends on the device).
        public var android: [String: JSONValue]
        /// The explicit `direct_boot_ok`, if `notification.android` gave one.
        public var directBootOK: Bool?
        /// The message-level `notification` block, for `display: notification`.
        public var notificationBlock: [String: JSONValue]?
        /// hapi's canonical plaintext, for encrypted devices.
        public var plaintext: [UInt8]?
        /// Ignored `android` keys, to log.
        public var warnings: [String]
        /// Pre-serialised pieces for ``FCMMessageBuilder/plainBody(_:token:platform:deliveryId:)``: the
        /// common data members (canonical JSON without the braces), the `android` object for devices
        /// without and with `direct_boot_ok`, the `notification` block.
        var dataMembers: [UInt8] = []
        var androidBytes: [UInt8] = []
        var androidWearBytes: [UInt8] = []
        var notificationBytes: [UInt8]?
        /// ``FCMMessageBuilder/payloadSize(data:notificationBlock:)`` of the common parts.
        var commonSize = 0

        mutating func serialise() {
            let d = JSONValue.object(data.mapValues { .string($0) }).canonicalBytes
            dataMembers = Array(d.dropFirst().dropLast())
            androidBytes = androidObject(platform: "phone").canonicalBytes
            androidWearBytes = androidObject(platform: "wear").canonicalBytes
            notificationBytes = notificationBlock.map { JSONValue.object($0).canonicalBytes }
            commonSize = FCMMessageBuilder.payloadSize(data: data, notificationBlock: notificationBlock)
        }

        /// The `android` object for a device of `platform` (`direct_boot_ok` for wear unless overridden).
        func androidObject(platform: String) -> JSONValue {
            var a = android
            if let d = directBootOK ?? (platform == "wear" ? true : nil) { a["direct_boot_ok"] = .bool(d) }
            return .object(a)
        }
    }

    /// Validates a notification and computes its device-independent parts.
    /// - Throws: ``FCMPayloadError`` for a reserved data key or a bad `android` value.
    public func prepare(_ n: HeraldNotification) throws(FCMPayloadError) -> Prepared {
        var data = n.data
        for (k, v) in HapiPayload.data(for: n) { data[k] = v }  // hapi's keys win
        data.removeValue(forKey: FCMMessageBuilder.deliveryIdKey)
        data[CloudPayload.notificationIdKey] = n.id
        for key in data.keys.sorted() {
            let lower = key.lowercased()
            if key.isEmpty || FCMMessageBuilder.reservedKeys.contains(lower)
                || FCMMessageBuilder.reservedPrefixes.contains(where: { lower.hasPrefix($0) })
            {
                throw FCMPayloadError(
                    "data key \"\(key)\" is reserved by FCM (from, notification, message_type, google*, gcm*)")
            }
        }
        let options = try FCMAndroidOptions(n.android, displayEnabled: display == .notification)
        var android: [String: JSONValue] = [:]
        android["priority"] = .string(options.priority ?? (n.priority == .high ? "HIGH" : "NORMAL"))
        if let ttl = options.ttlSeconds ?? n.ttl {
            guard (0...FCMAndroidOptions.maximumTTL).contains(ttl) else {
                throw FCMPayloadError("ttl must be in 0...\(FCMAndroidOptions.maximumTTL) seconds for FCM")
            }
            android["ttl"] = .string("\(ttl)s")
        }
        if let key = options.collapseKey ?? n.collapseTag { android["collapse_key"] = .string(key) }
        if let p = options.restrictedPackageName { android["restricted_package_name"] = .string(p) }
        var block: [String: JSONValue]?
        if display == .notification, n.title != nil || n.body != nil {
            var b: [String: JSONValue] = [:]
            if let t = n.title { b["title"] = .string(t) }
            if let body = HapiPayload.data(for: n)["body"] { b["body"] = .string(body) }
            block = b
            if !options.display.isEmpty { android["notification"] = .object(options.display) }
        }
        var prepared = Prepared(
            data: data, android: android, directBootOK: options.directBootOK, notificationBlock: block,
            plaintext: encryption == .hapiV1 ? HapiPayload.plaintext(for: n) : nil, warnings: options.warnings)
        prepared.serialise()
        return prepared
    }

    /// The data map one device gets: the plain map plus ``deliveryIdKey``, or for an encrypted device
    /// exactly `{"v":"1","e":<envelope>}`.
    /// - Throws: ``FCMPayloadError`` when encryption fails.
    public func data(
        _ prepared: Prepared, deliveryId: String, pushKey: [UInt8]?, nonce: [UInt8]
    ) throws(FCMPayloadError) -> [String: String] {
        if encryption == .hapiV1, let key = pushKey, let plaintext = prepared.plaintext {
            do {
                return ["v": "1", "e": try HapiPayload.envelope(plaintext: plaintext, key: key, nonce: nonce)]
            } catch {
                throw FCMPayloadError("hapi-v1 encryption failed: \(error.message)")
            }
        }
        var data = prepared.data
        data[FCMMessageBuilder.deliveryIdKey] = deliveryId
        return data
    }

    /// The payload size FCM limits: UTF-8 bytes of every data key and value, plus the display
    /// notification's title and body when there is one.
    public static func payloadSize(data: [String: String], notificationBlock: [String: JSONValue]?) -> Int {
        var total = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        for v in (notificationBlock ?? [:]).values { total += v.stringValue?.utf8.count ?? 0 }
        return total
    }

    /// The request body for one device: `{"message":{"token":…,"data":{…},"android":{…}[,"notification":{…}]}}`.
    /// - Throws: ``FCMPayloadError`` when the payload exceeds 4096 bytes or encryption fails.
    public func body(
        _ prepared: Prepared, token: String, platform: String, deliveryId: String, pushKey: [UInt8]?,
        nonce: [UInt8]
    ) throws(FCMPayloadError) -> JSONValue {
        let data = try data(prepared, deliveryId: deliveryId, pushKey: pushKey, nonce: nonce)
        let size = FCMMessageBuilder.payloadSize(data: data, notificationBlock: prepared.notificationBlock)
        guard size <= FCMMessageBuilder.maximumPayloadBytes else {
            throw FCMPayloadError(
                "payload is \(size) bytes, over FCM's \(FCMMessageBuilder.maximumPayloadBytes)-byte limit (data keys + values)"
            )
        }
        var message: [String: JSONValue] = [
            "token": .string(token), "data": .object(data.mapValues { .string($0) }),
            "android": prepared.androidObject(platform: platform),
        ]
        if let block = prepared.notificationBlock { message["notification"] = .object(block) }
        return .object(["message": .object(message)])
    }

    /// The same message as ``body(_:token:platform:deliveryId:pushKey:nonce:)`` for a device without
    /// encryption, as bytes spliced from the pieces serialised once in ``prepare(_:)`` (members in a
    /// different order; equal JSON). This is the fan-out path: only the token and delivery id are
    /// serialised per device.
    /// - Throws: ``FCMPayloadError`` when the payload exceeds 4096 bytes.
    public func plainBody(_ prepared: Prepared, token: String, platform: String, deliveryId: String)
        throws(FCMPayloadError) -> [UInt8]
    {
        let key = FCMMessageBuilder.deliveryIdKey
        let size = prepared.commonSize + key.utf8.count + deliveryId.utf8.count
        guard size <= FCMMessageBuilder.maximumPayloadBytes else {
            throw FCMPayloadError(
                "payload is \(size) bytes, over FCM's \(FCMMessageBuilder.maximumPayloadBytes)-byte limit (data keys + values)"
            )
        }
        let android = platform == "wear" ? prepared.androidWearBytes : prepared.androidBytes
        var out: [UInt8] = []
        out.reserveCapacity(prepared.dataMembers.count + android.count + token.utf8.count + 160)
        out += Array(#"{"message":{"android":"#.utf8)
        out += android
        out += Array(#","data":{"#.utf8)
        out += prepared.dataMembers
        if !prepared.dataMembers.isEmpty { out.append(UInt8(ascii: ",")) }
        out += JSONValue.string(key).canonicalBytes
        out.append(UInt8(ascii: ":"))
        out += JSONValue.string(deliveryId).canonicalBytes
        out.append(UInt8(ascii: "}"))
        if let n = prepared.notificationBytes {
            out += Array(#","notification":"#.utf8)
            out += n
        }
        out += Array(#","token":"#.utf8)
        out += JSONValue.string(token).canonicalBytes
        out += Array("}}".utf8)
        return out
    }
}
