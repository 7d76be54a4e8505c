import ChannelAPI
import Foundation

/// A validated Live Activity push built from a notification's `liveActivity` object (pure).
///
/// Accepted fields: `event` (start | update | end, required), `contentState` (object, required),
/// `timestamp`, `staleDate`, `dismissalDate` (unix seconds), `relevanceScore` (number),
/// `alert` ({title, body, sound}), `attributesType` and `attributes` (start only), `pushToken`
/// (hex; the activity's own token, used instead of the device token), `ref` (the hub's
/// reference, not sent) and `revision` (an integer, Pulse Relay's alias of
/// `contentState.revision`, not sent: a revision in `contentState` is sent as part of it). Anything
/// else, or a wrong type, is refused before sending.
public struct APNsLiveActivity: Sendable, Equatable {
    /// The `aps` dictionary.
    public let aps: [String: JSONValue]
    /// `apns-priority`: 10 for `start`, for a push with an alert, or `priority: high`; else 5
    /// (Apple's budget-friendly default for silent updates).
    public let priority: Int
    /// The activity push token to send to, when given.
    public let pushToken: String?

    static let knownKeys: Set<String> = [
        "ref", "event", "contentState", "timestamp", "staleDate", "dismissalDate", "relevanceScore", "alert",
        "attributesType", "attributes", "pushToken", "revision",
    ]

    /// Validates `la` and builds the `aps` dictionary; `now` is the default `timestamp`.
    public init(_ la: [String: JSONValue], notification: ChannelAPI.Notification, now: Date) throws(APNsPayloadError) {
        for key in la.keys.sorted() where !APNsLiveActivity.knownKeys.contains(key) {
            throw APNsPayloadError("liveActivity.\(key) is not a known Live Activity field")
        }
        guard let event = la["event"]?.stringValue else {
            throw APNsPayloadError("liveActivity.event is required: start, update or end")
        }
        guard ["start", "update", "end"].contains(event) else {
            throw APNsPayloadError("liveActivity.event must be start, update or end, not \"\(event)\"")
        }
        guard let state = la["contentState"]?.objectValue else {
            throw APNsPayloadError("liveActivity.contentState is required and must be an object")
        }
        var aps: [String: JSONValue] = ["event": .string(event), "content-state": .object(state)]

        func seconds(_ key: String) throws(APNsPayloadError) -> Int64? {
            guard let v = la[key], !v.isNull else { return nil }
            guard let i = v.intValue else {
                throw APNsPayloadError("liveActivity.\(key) must be an integer number of unix seconds")
            }
            guard i >= 0, i < 100_000_000_000 else {
                throw APNsPayloadError("liveActivity.\(key) must be unix seconds (a millisecond value was given?)")
            }
            return Int64(i)
        }
        aps["timestamp"] = .number(Double(try seconds("timestamp") ?? now.secondsSince1970))
        if let s = try seconds("staleDate") { aps["stale-date"] = .number(Double(s)) }
        if let d = try seconds("dismissalDate") { aps["dismissal-date"] = .number(Double(d)) }
        if let r = la["relevanceScore"], !r.isNull {
            guard let n = r.numberValue, n.isFinite else {
                throw APNsPayloadError("liveActivity.relevanceScore must be a number")
            }
            aps["relevance-score"] = .number(n)
        }

        var alert: [String: JSONValue]?
        if let a = la["alert"], !a.isNull {
            guard let o = a.objectValue else { throw APNsPayloadError("liveActivity.alert must be an object") }
            var out: [String: JSONValue] = [:]
            for (k, v) in o {
                guard ["title", "body", "sound"].contains(k) else {
                    throw APNsPayloadError("liveActivity.alert.\(k) is not allowed (title, body, sound)")
                }
                switch v {
                case .string: out[k] = v
                case .object where k != "sound": out[k] = v  // {loc-key, loc-args}
                default: throw APNsPayloadError("liveActivity.alert.\(k) must be a string")
                }
            }
            alert = out
        }

        let attributesType = la["attributesType"]
        let attributes = la["attributes"]
        if event == "start" {
            guard let t = attributesType?.stringValue, !t.isEmpty else {
                throw APNsPayloadError("liveActivity.attributesType (a string) is required for event start")
            }
            guard let attrs = attributes?.objectValue else {
                throw APNsPayloadError("liveActivity.attributes (an object) is required for event start")
            }
            aps["attributes-type"] = .string(t)
            aps["attributes"] = .object(attrs)
            if alert == nil {
                var fallback: [String: JSONValue] = [:]
                if let t = notification.title { fallback["title"] = .string(t) }
                if let b = notification.body { fallback["body"] = .string(b) }
                guard !fallback.isEmpty else {
                    throw APNsPayloadError("event start needs liveActivity.alert (or a notification title or body)")
                }
                alert = fallback
            }
        } else if attributesType != nil || attributes != nil {
            throw APNsPayloadError("liveActivity.attributesType and attributes are only sent with event start")
        }
        if let alert { aps["alert"] = .object(alert) }

        var token: String?
        if let t = la["pushToken"], !t.isNull {
            guard let s = t.stringValue, !s.isEmpty, s.count % 2 == 0, s.utf8.count <= 200, s.allSatisfy(\.isHexDigit)
            else { throw APNsPayloadError("liveActivity.pushToken must be the activity push token in hex") }
            token = s.lowercased()
        }
        if la["ref"].map({ $0.stringValue == nil && !$0.isNull }) == true {
            throw APNsPayloadError("liveActivity.ref must be a string")
        }
        if let r = la["revision"], !r.isNull, (r.intValue ?? -1) < 0 {
            throw APNsPayloadError("liveActivity.revision must be a non-negative integer")
        }

        self.aps = aps
        self.pushToken = token
        self.priority = event == "start" || alert != nil || notification.priority == .high ? 10 : 5
    }
}
