import ChannelAPI

/// How plaintexts are padded before encryption, so that body lengths say less about content.
public enum WebPushPadding: Sendable, Equatable {
    /// Round the record (payload + delimiter) up to the next multiple of `bucket` bytes, capped at
    /// ``WebPushEncryptor/maxRecordPlaintext`` (3994): with 256 the bodies are 358, 614, … bytes.
    case bucket(Int)
    /// Only the one delimiter byte.
    case none

    /// The default: 256-byte buckets.
    public static let `default` = WebPushPadding.bucket(256)

    /// The record plaintext length for a payload of `count` bytes, or nil when it cannot fit in a
    /// 4096-byte body.
    public func recordLength(forPayload count: Int) -> Int? {
        let minimum = count + 1
        guard minimum <= WebPushEncryptor.maxRecordPlaintext else { return nil }
        switch self {
        case .none:
            return minimum
        case .bucket(let size):
            guard size > 1 else { return minimum }
            let rounded = (minimum + size - 1) / size * size
            return min(rounded, WebPushEncryptor.maxRecordPlaintext)
        }
    }
}

/// The JSON a service worker receives (see `Examples/web/sw.js`). Pure.
///
/// `{id, type, title, body, tag, url, data, actions, badge, icon, severity, deviceId, …}`: `id` is
/// the notification id the worker reports lifecycle events with; `actions` are in the
/// Notifications API shape (`{action, title}` plus `url`/`destructive` when given); `badge` is the
/// count; `icon`, `image`, `requireInteraction`, `renotify`, `silent`, `lang` and `dir` are copied
/// from the notification's `web` object when present. Absent values are left out.
public enum WebPushPayload {
    /// Keys copied from `notification.web` into the payload.
    public static let webKeys = ["icon", "image", "requireInteraction", "renotify", "silent", "lang", "dir"]

    /// The payload object without the per-device `deviceId`.
    public static func object(for notification: HeraldNotification, badge: Int?) -> [String: JSONValue] {
        var o: [String: JSONValue] = ["id": .string(notification.id), "type": .string(notification.type)]
        if let t = notification.title { o["title"] = .string(t) }
        if let b = notification.body { o["body"] = .string(b) }
        if let tag = notification.collapseTag { o["tag"] = .string(tag) }
        if let url = notification.url { o["url"] = .string(url) }
        if let s = notification.severity { o["severity"] = .string(s.rawValue) }
        if !notification.data.isEmpty { o["data"] = .object(notification.data.mapValues { .string($0) }) }
        if !notification.actions.isEmpty {
            o["actions"] = .array(
                notification.actions.map { a in
                    var m: [String: JSONValue] = ["action": .string(a.id), "title": .string(a.title)]
                    if a.destructive { m["destructive"] = true }
                    if let u = a.url { m["url"] = .string(u) }
                    return .object(m)
                })
        }
        if let badge { o["badge"] = .number(Double(badge)) }
        for key in webKeys { if let v = notification.web[key], !v.isNull { o[key] = v } }
        return o
    }

    /// The payload bytes for one device (canonical JSON).
    public static func bytes(_ base: [String: JSONValue], deviceId: String?) -> [UInt8] {
        var o = base
        if let deviceId { o["deviceId"] = .string(deviceId) }
        return JSONValue.object(o).canonicalBytes
    }

    /// One notification's payload serialised once: each device's bytes are the shared prefix, the
    /// device id as a JSON string, and the shared suffix, byte-identical to ``bytes(_:deviceId:)``.
    public struct Template: Sendable {
        private let base: [String: JSONValue]
        private let parts: (prefix: [UInt8], suffix: [UInt8])?

        /// A stand-in device id no real one contains (NUL is refused in device ids).
        private static let marker = "\u{0}herald-device-id\u{0}"

        /// Serialises `base` with a marker where the device id goes.
        public init(_ base: [String: JSONValue]) {
            self.base = base
            var o = base
            o["deviceId"] = .string(Template.marker)
            let bytes = JSONValue.object(o).canonicalBytes
            let needle = JSONValue.string(Template.marker).canonicalBytes
            var found: [Int] = []
            if bytes.count >= needle.count {
                for i in 0...(bytes.count - needle.count) where bytes[i] == needle[0] {
                    if bytes[i..<(i + needle.count)].elementsEqual(needle) { found.append(i) }
                }
            }
            // A payload that itself contains the marker text is serialised per device instead.
            if found.count == 1, let at = found.first {
                parts = (Array(bytes[..<at]), Array(bytes[(at + needle.count)...]))
            } else {
                parts = nil
            }
        }

        /// The payload bytes for one device.
        public func bytes(deviceId: String?) -> [UInt8] {
            guard let deviceId, let parts, !deviceId.utf8.contains(0) else {
                return WebPushPayload.bytes(base, deviceId: deviceId)
            }
            let id = JSONValue.string(deviceId).canonicalBytes
            var out: [UInt8] = []
            out.reserveCapacity(parts.prefix.count + id.count + parts.suffix.count)
            out.append(contentsOf: parts.prefix)
            out.append(contentsOf: id)
            out.append(contentsOf: parts.suffix)
            return out
        }
    }
}
