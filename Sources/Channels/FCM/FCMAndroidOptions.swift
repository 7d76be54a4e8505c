import ChannelAPI

/// A notification that cannot be sent through FCM as given (refused before anything is sent).
public struct FCMPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, naming the field.
    public let message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { message }
}

/// The validated subset of `notification.android` (Home Assistant's unified notify schema, snake_case).
///
/// Delivery keys (`priority`, `ttl`, `collapse_key`, `restricted_package_name`, `direct_boot_ok`) always
/// apply. Display keys go to `android.notification` and only apply with `display: notification`;
/// with `display: data` they are ignored with a warning (the app builds the notification itself).
/// Unknown keys are ignored with a warning, because `notification.android` is shared with other
/// Android channels; a known key with a bad value refuses the delivery.
public struct FCMAndroidOptions: Sendable, Equatable {
    /// `priority`: overrides the notification's priority for `android.priority` (`HIGH` / `NORMAL`).
    public var priority: String?
    /// `ttl`: seconds, 0…2,419,200; overrides the notification's `ttl`.
    public var ttlSeconds: Int?
    /// `collapse_key`: overrides the collapse tag.
    public var collapseKey: String?
    /// `restricted_package_name`.
    public var restrictedPackageName: String?
    /// `direct_boot_ok`: overrides the `wear` default.
    public var directBootOK: Bool?
    /// Members of `android.notification`, already in FCM's JSON form.
    public var display: [String: JSONValue]
    /// Keys ignored, with why; the channel logs them as warnings.
    public var warnings: [String]

    /// Delivery keys.
    public static let deliveryKeys: Set<String> = [
        "priority", "ttl", "collapse_key", "restricted_package_name", "direct_boot_ok",
    ]
    /// Display keys (`android.notification` members).
    public static let displayKeys: Set<String> = [
        "channel_id", "sticky", "color", "icon", "visibility", "tag", "notification_priority", "sound",
        "click_action", "image", "ticker", "local_only", "notification_count",
    ]

    /// The most seconds FCM keeps a message (4 weeks).
    public static let maximumTTL = 2_419_200

    /// Reads and validates `android`; `displayEnabled` is whether the channel sends a display notification.
    /// - Throws: ``FCMPayloadError`` for a known key with a wrong value.
    public init(_ android: [String: JSONValue], displayEnabled: Bool) throws(FCMPayloadError) {
        display = [:]
        warnings = []
        for key in android.keys.sorted() {
            guard let value = android[key], !value.isNull else { continue }
            let field = "android.\(key)"
            func string(maxBytes: Int = 1024) throws(FCMPayloadError) -> String {
                guard let s = value.stringValue, !s.isEmpty, s.utf8.count <= maxBytes else {
                    throw FCMPayloadError("\(field) must be a non-empty string of at most \(maxBytes) bytes")
                }
                return s
            }
            func bool() throws(FCMPayloadError) -> Bool {
                guard let b = value.boolValue else { throw FCMPayloadError("\(field) must be a boolean") }
                return b
            }
            func choice(_ table: [String: String]) throws(FCMPayloadError) -> String {
                guard let s = value.stringValue, let mapped = table[s.lowercased()] else {
                    throw FCMPayloadError("\(field) must be one of \(table.keys.sorted().joined(separator: ", "))")
                }
                return mapped
            }
            if FCMAndroidOptions.displayKeys.contains(key), !displayEnabled {
                warnings.append("\(field) ignored: display keys need display: notification")
                continue
            }
            switch key {
            case "priority":
                priority = try choice(["high": "HIGH", "normal": "NORMAL"])
            case "ttl":
                guard let n = value.intValue, (0...FCMAndroidOptions.maximumTTL).contains(n) else {
                    throw FCMPayloadError(
                        "\(field) must be an integer number of seconds in 0...\(FCMAndroidOptions.maximumTTL)")
                }
                ttlSeconds = n
            case "collapse_key": collapseKey = try string(maxBytes: 256)
            case "restricted_package_name": restrictedPackageName = try string(maxBytes: 256)
            case "direct_boot_ok": directBootOK = try bool()
            case "channel_id", "icon", "tag", "sound", "click_action", "ticker":
                display[key] = .string(try string())
            case "image":
                let s = try string(maxBytes: 2048)
                guard s.hasPrefix("https://") else { throw FCMPayloadError("\(field) must be an https URL") }
                display[key] = .string(s)
            case "sticky", "local_only":
                display[key] = .bool(try bool())
            case "color":
                let s = try string(maxBytes: 7)
                let hex = s.dropFirst()
                guard s.hasPrefix("#"), hex.count == 6, hex.allSatisfy(\.isHexDigit) else {
                    throw FCMPayloadError("\(field) must be #rrggbb")
                }
                display[key] = .string(s)
            case "visibility":
                display[key] = .string(try choice(["public": "PUBLIC", "private": "PRIVATE", "secret": "SECRET"]))
            case "notification_priority":
                var table: [String: String] = [:]
                for p in ["min", "low", "default", "high", "max"] {
                    table[p] = "PRIORITY_\(p.uppercased())"
                    table["priority_\(p)"] = "PRIORITY_\(p.uppercased())"
                }
                display[key] = .string(try choice(table))
            case "notification_count":
                guard let n = value.intValue, (0...999_999).contains(n) else {
                    throw FCMPayloadError("\(field) must be an integer in 0...999999")
                }
                display[key] = .number(Double(n))
            default:
                warnings.append("\(field) ignored: not a key the fcm channel supports")
            }
        }
    }
}
