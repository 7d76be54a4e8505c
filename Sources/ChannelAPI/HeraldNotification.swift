import Foundation

/// How urgent a notification is for a person (contract §4).
public enum Severity: String, Sendable, CaseIterable, Codable {
    /// Informational.
    case info
    /// Something finished well.
    case success
    /// Needs attention.
    case warning
    /// Something failed.
    case error
}

/// Delivery priority requested by the hub.
public enum Priority: String, Sendable, CaseIterable, Codable {
    /// Deliver now, wake the device.
    case high
    /// The provider's default.
    case normal
    /// May be delayed to save power.
    case low
}

/// A button attached to a notification.
public struct NotificationAction: Sendable, Equatable {
    /// Stable id returned in `action` lifecycle events.
    public var id: String
    /// Button text.
    public var title: String
    /// Shown as destructive where the platform supports it.
    public var destructive: Bool
    /// A URL to open instead of sending an action event (Telegram URL buttons, Web Push navigate).
    public var url: String?

    /// Creates an action.
    public init(id: String, title: String, destructive: Bool = false, url: String? = nil) {
        self.id = id
        self.title = title
        self.destructive = destructive
        self.url = url
    }
}

/// One notification as a hub sends it (contract §4). Generic fields at the top level, platform
/// specifics in their own objects, kept as JSON for the channel that understands them.
public struct HeraldNotification: Sendable, Equatable {
    /// Unique id; generated when the hub gives none.
    public var id: String
    /// Routing namespace; `default` when absent.
    public var namespace: String
    /// The kind of event (`permission-request`, `ready`, …); `notification` when absent.
    public var type: String
    /// Title text.
    public var title: String?
    /// Body text.
    public var body: String?
    /// Severity, if given.
    public var severity: Severity?
    /// A URL or app path to open on tap.
    public var url: String?
    /// The explicit collapse identity; see ``collapseTag``.
    public var tag: String?
    /// Free string data passed to the app.
    public var data: [String: String]
    /// Buttons.
    public var actions: [NotificationAction]
    /// An explicit badge count.
    public var badge: Int?
    /// Time to live in seconds.
    public var ttl: Int?
    /// Delivery priority.
    public var priority: Priority?
    /// Android-specific options (FCM), as given.
    public var android: [String: JSONValue]
    /// iOS-specific options (APNs), as given.
    public var ios: [String: JSONValue]
    /// Web-specific options (Web Push), as given.
    public var web: [String: JSONValue]
    /// Telegram-specific options, as given.
    public var telegram: [String: JSONValue]
    /// Live Activity content, as given; validated by the channels that send it.
    public var liveActivity: [String: JSONValue]?
    /// Per-notification options of other platforms (a plugin's), by platform name, as given: the
    /// JSON's top-level objects under any other lowercase name (`"gotify": {"priority": 8}`), as
    /// `android` carries FCM's. The router refuses a name no channel module declares as a platform;
    /// a channel reads its own with ``options(for:)``.
    public var platformOptions: [String: [String: JSONValue]]

    /// Creates a notification. `id` defaults to a fresh UUID.
    public init(
        id: String = HeraldNotification.freshID(), namespace: String = "default",
        type: String = "notification",
        title: String? = nil, body: String? = nil, severity: Severity? = nil, url: String? = nil,
        tag: String? = nil, data: [String: String] = [:], actions: [NotificationAction] = [], badge: Int? = nil,
        ttl: Int? = nil, priority: Priority? = nil, android: [String: JSONValue] = [:],
        ios: [String: JSONValue] = [:], web: [String: JSONValue] = [:], telegram: [String: JSONValue] = [:],
        liveActivity: [String: JSONValue]? = nil, platformOptions: [String: [String: JSONValue]] = [:]
    ) {
        self.id = id
        self.namespace = namespace
        self.type = type
        self.title = title
        self.body = body
        self.severity = severity
        self.url = url
        self.tag = tag
        self.data = data
        self.actions = actions
        self.badge = badge
        self.ttl = ttl
        self.priority = priority
        self.android = android
        self.ios = ios
        self.web = web
        self.telegram = telegram
        self.liveActivity = liveActivity
        self.platformOptions = platformOptions
    }

    /// The per-notification options for `platform`: `android`, `ios`, `web` and `telegram` for the
    /// built-in platforms of those names, else ``platformOptions``.
    public func options(for platform: String) -> [String: JSONValue] {
        switch platform {
        case "android": android
        case "ios": ios
        case "web": web
        case "telegram": telegram
        default: platformOptions[platform] ?? [:]
        }
    }

    /// Whether `key` can name a plugin platform's options: 1-32 characters of lowercase letters,
    /// digits and `-`, starting with a letter.
    public static func isPlatformOptionsKey(_ key: String) -> Bool {
        guard let first = key.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first), key.utf8.count <= 32
        else { return false }
        return key.utf8.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "-")
        }
    }

    /// The collapse identity: ``tag`` when present, else `<type>-<data.sessionId>`; cut to 64 bytes
    /// on a UTF-8 boundary (the APNs collapse-id limit, which every channel shares).
    public var collapseTag: String? {
        let raw = tag ?? data["sessionId"].map { "\(type)-\($0)" }
        return raw.map { CollapseID.truncate($0, maxBytes: 64) }
    }
}

extension HeraldNotification {
    /// A fresh lowercase version-4 UUID for a notification given without an id: from `getrandom`,
    /// not Foundation's `UUID()`, which opens `/dev/urandom` on every call.
    public static func freshID() -> String { UUIDGenerator.make(1, random: SystemRandom())[0] }

    /// The members of a notification object, by field, as ``init(json:)`` reads them in one pass: the
    /// contract's 18 fields; any other key is refused unless it names a plugin platform's options.
    private struct Members {
        var id, namespace, type, title, body, severity, url, tag, data: JSONValue?
        var actions, badge, ttl, priority, android, ios, web, telegram, liveActivity: JSONValue?

        /// Keeps `value` when `key` is one of the contract's fields; false for any other key.
        mutating func take(_ key: String, _ value: JSONValue) -> Bool {
            switch key {
            case "id": id = value
            case "namespace": namespace = value
            case "type": type = value
            case "title": title = value
            case "body": body = value
            case "severity": severity = value
            case "url": url = value
            case "tag": tag = value
            case "data": data = value
            case "actions": actions = value
            case "badge": badge = value
            case "ttl": ttl = value
            case "priority": priority = value
            case "android": android = value
            case "ios": ios = value
            case "web": web = value
            case "telegram": telegram = value
            case "liveActivity": liveActivity = value
            default: return false
            }
            return true
        }
    }

    /// Parses and validates the contract's notification JSON. Errors name the field.
    public init(json: JSONValue) throws(ValidationError) { try self.init(json: json, stored: false) }

    /// Parses a notification as ``init(json:)`` does; with `stored`, a notification read back from
    /// the store, which an older Herald may have accepted before the id rule (no `/` or control
    /// characters) and the ``maxDataBytes`` cap: those two are not checked again, so its deliveries
    /// still go out.
    public init(json: JSONValue, stored: Bool) throws(ValidationError) {
        guard let o = json.objectValue else { throw ValidationError(field: "notification", "must be a JSON object") }
        // One pass over the members (a notification has a few of the 18 fields): no hashing per field.
        var present = Members()
        // The first unknown key in sorted order, so the error does not depend on hashing. An object under
        // a platform-like name is a plugin platform's options; the router checks the name is declared.
        var unknown: String?
        var platformOptions: [String: [String: JSONValue]] = [:]
        for (key, value) in o where !present.take(key, value) {
            if let options = value.objectValue, HeraldNotification.isPlatformOptionsKey(key) {
                platformOptions[key] = options
                continue
            }
            if unknown.map({ key < $0 }) ?? true { unknown = key }
        }
        if let unknown { throw ValidationError(field: unknown, "unknown field") }
        let m = present
        func string(_ key: String, _ v: JSONValue?, maxLength: Int = 8192) throws(ValidationError) -> String? {
            guard let v, !v.isNull else { return nil }
            guard let s = v.stringValue else {
                throw ValidationError(field: key, "must be a string, not \(v.kindName)")
            }
            // A string has no more characters than UTF-8 bytes: count them only when the bytes are many.
            guard s.utf8.count <= maxLength || s.count <= maxLength else {
                throw ValidationError(field: key, "longer than \(maxLength) characters")
            }
            return s
        }
        func object(_ key: String, _ v: JSONValue?) throws(ValidationError) -> [String: JSONValue]? {
            guard let v, !v.isNull else { return nil }
            guard let obj = v.objectValue else {
                throw ValidationError(field: key, "must be an object, not \(v.kindName)")
            }
            return obj
        }
        func integer(_ key: String, _ v: JSONValue?, range: ClosedRange<Int>) throws(ValidationError) -> Int? {
            guard let v, !v.isNull else { return nil }
            guard let i = v.intValue else { throw ValidationError(field: key, "must be an integer, not \(v.kindName)") }
            guard range.contains(i) else {
                throw ValidationError(field: key, "must be in \(range.lowerBound)...\(range.upperBound)")
            }
            return i
        }

        let id = try string("id", m.id, maxLength: 128) ?? HeraldNotification.freshID()
        if stored {
            guard !id.isEmpty else { throw ValidationError(field: "id", "must not be empty") }
        } else {
            try HeraldNotification.validateID(id)
        }
        let namespace = try string("namespace", m.namespace, maxLength: 128) ?? "default"
        try HeraldNotification.validateName(namespace, field: "namespace")
        let type = try string("type", m.type, maxLength: 128) ?? "notification"
        try HeraldNotification.validateName(type, field: "type")

        var severity: Severity?
        if let s = try string("severity", m.severity) {
            guard let parsed = Severity(rawValue: s) else {
                throw ValidationError(field: "severity", "must be one of info, success, warning, error")
            }
            severity = parsed
        }
        var priority: Priority?
        if let p = try string("priority", m.priority) {
            guard let parsed = Priority(rawValue: p) else {
                throw ValidationError(field: "priority", "must be one of high, normal, low")
            }
            priority = parsed
        }
        var data: [String: String] = [:]
        var dataBytes = 0
        for (k, v) in try object("data", m.data) ?? [:] {
            guard let s = v.stringValue else {
                throw ValidationError(field: "data.\(k)", "must be a string, not \(v.kindName)")
            }
            dataBytes += k.utf8.count + s.utf8.count
            guard stored || dataBytes <= HeraldNotification.maxDataBytes else {
                throw ValidationError(
                    field: "data",
                    "keys and values are over \(HeraldNotification.maxDataBytes) bytes of UTF-8 in all "
                        + "(push services carry 4 KiB; send a link or an id, not the content)")
            }
            data[k] = s
        }
        var actions: [NotificationAction] = []
        if let v = m.actions, !v.isNull {
            guard let list = v.arrayValue else { throw ValidationError(field: "actions", "must be an array") }
            guard list.count <= 10 else { throw ValidationError(field: "actions", "at most 10 actions") }
            var seen: Set<String> = []
            for (i, item) in list.enumerated() {
                let f = "actions[\(i)]"
                guard let a = item.objectValue else { throw ValidationError(field: f, "must be an object") }
                for key in a.keys.sorted() where !["id", "title", "destructive", "url"].contains(key) {
                    throw ValidationError(field: "\(f).\(key)", "unknown field")
                }
                guard let aid = a["id"]?.stringValue, !aid.isEmpty, aid.utf8.count <= 64 else {
                    throw ValidationError(field: "\(f).id", "required string of 1-64 bytes")
                }
                guard seen.insert(aid).inserted else { throw ValidationError(field: "\(f).id", "duplicate action id") }
                guard let title = a["title"]?.stringValue, !title.isEmpty else {
                    throw ValidationError(field: "\(f).title", "required non-empty string")
                }
                var destructive = false
                if let d = a["destructive"], !d.isNull {
                    guard let b = d.boolValue else {
                        throw ValidationError(field: "\(f).destructive", "must be a boolean")
                    }
                    destructive = b
                }
                var url: String?
                if let u = a["url"], !u.isNull {
                    guard let s = u.stringValue else { throw ValidationError(field: "\(f).url", "must be a string") }
                    url = s
                }
                actions.append(NotificationAction(id: aid, title: title, destructive: destructive, url: url))
            }
        }
        var liveActivity: [String: JSONValue]?
        if let la = try object("liveActivity", m.liveActivity) { liveActivity = la }

        self.init(
            id: id, namespace: namespace, type: type, title: try string("title", m.title),
            body: try string("body", m.body), severity: severity, url: try string("url", m.url),
            tag: try string("tag", m.tag, maxLength: 256), data: data, actions: actions,
            badge: try integer("badge", m.badge, range: 0...99_999),
            ttl: try integer("ttl", m.ttl, range: 0...(28 * 86_400)), priority: priority,
            android: try object("android", m.android) ?? [:], ios: try object("ios", m.ios) ?? [:],
            web: try object("web", m.web) ?? [:], telegram: try object("telegram", m.telegram) ?? [:],
            liveActivity: liveActivity, platformOptions: platformOptions)
        if title == nil, body == nil, liveActivity == nil {
            throw ValidationError(field: "title", "a notification needs a title, a body or a liveActivity")
        }
    }

    /// Parses notification JSON text.
    public init(jsonText: String) throws(ValidationError) { try self.init(jsonText: jsonText, stored: false) }

    /// Parses notification JSON text read back from the store (see ``init(json:stored:)``).
    public init(storedJSONText jsonText: String) throws(ValidationError) {
        try self.init(jsonText: jsonText, stored: true)
    }

    init(jsonText: String, stored: Bool) throws(ValidationError) {
        let value: JSONValue
        do { value = try JSONValue.parse(jsonText) } catch {
            throw ValidationError(field: "notification", error.description)
        }
        try self.init(json: value, stored: stored)
    }

    /// The notification as contract JSON (round-trips through ``init(json:)``).
    public var json: JSONValue {
        var o: [String: JSONValue] = ["id": .string(id), "namespace": .string(namespace), "type": .string(type)]
        if let title { o["title"] = .string(title) }
        if let body { o["body"] = .string(body) }
        if let severity { o["severity"] = .string(severity.rawValue) }
        if let url { o["url"] = .string(url) }
        if let tag { o["tag"] = .string(tag) }
        if !data.isEmpty { o["data"] = .object(data.mapValues { .string($0) }) }
        if !actions.isEmpty {
            o["actions"] = .array(
                actions.map { a in
                    var m: [String: JSONValue] = ["id": .string(a.id), "title": .string(a.title)]
                    if a.destructive { m["destructive"] = .bool(true) }
                    if let u = a.url { m["url"] = .string(u) }
                    return .object(m)
                })
        }
        if let badge { o["badge"] = .number(Double(badge)) }
        if let ttl { o["ttl"] = .number(Double(ttl)) }
        if let priority { o["priority"] = .string(priority.rawValue) }
        if !android.isEmpty { o["android"] = .object(android) }
        if !ios.isEmpty { o["ios"] = .object(ios) }
        if !web.isEmpty { o["web"] = .object(web) }
        if !telegram.isEmpty { o["telegram"] = .object(telegram) }
        if let liveActivity { o["liveActivity"] = .object(liveActivity) }
        for (platform, options) in platformOptions { o[platform] = .object(options) }
        return .object(o)
    }

    /// Names (namespace, type) are 1-128 characters of letters, digits, `.`, `_`, `-`.
    /// The most UTF-8 bytes the keys and values of ``data`` may hold together (16 KiB): four times
    /// what FCM and APNs carry, so no push service's limit is cut short, and small enough that a
    /// request's memory stays bounded by `max-body` rather than by what the client sends.
    public static let maxDataBytes = 16 * 1024

    /// Refuses an id that could never be read back, confirmed or waited on by its URL: an empty id,
    /// one with `/` (a path separator, even percent-encoded), or one with a control character
    /// (NUL, CR, LF, DEL and the rest of C0). At most 128 characters is checked by the reader.
    public static func validateID(_ id: String) throws(ValidationError) {
        guard !id.isEmpty else { throw ValidationError(field: "id", "must not be empty") }
        guard !id.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "/") }) else {
            throw ValidationError(field: "id", "must not contain / or control characters (it is part of URLs)")
        }
    }

    static func validateName(_ s: String, field: String) throws(ValidationError) {
        // On the UTF-8 bytes: every allowed character is one ASCII byte, and a byte of a multi-byte
        // character is never one of them.
        guard !s.isEmpty, s.utf8.count <= 128,
            s.utf8.allSatisfy({ b in
                (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                    || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: ".")
                    || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
            })
        else { throw ValidationError(field: field, "must be 1-128 characters of A-Z a-z 0-9 . _ -") }
    }
}
