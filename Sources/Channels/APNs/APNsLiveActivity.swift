import ChannelAPI
import ChannelSupport
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

    /// APNs' own fields beyond the common ones (``LiveActivityFields``).
    static let apnsKeys: Set<String> = ["attributesType", "attributes", "pushToken"]

    /// Validates `la` and builds the `aps` dictionary; `now` is the default `timestamp`.
    public init(_ la: [String: JSONValue], notification: HeraldNotification, now: Date) throws(APNsPayloadError) {
        let fields: LiveActivityFields
        do {
            fields = try LiveActivityFields(la, extraKeys: APNsLiveActivity.apnsKeys, service: "known")
        } catch {
            throw APNsPayloadError(error.reason)
        }
        let event = fields.event
        var aps: [String: JSONValue] = ["event": .string(event), "content-state": .object(fields.contentState)]
        aps["timestamp"] = .number(Double(fields.timestamp ?? now.secondsSince1970))
        if let s = fields.staleDate { aps["stale-date"] = .number(Double(s)) }
        if let d = fields.dismissalDate { aps["dismissal-date"] = .number(Double(d)) }
        if let r = fields.relevanceScore { aps["relevance-score"] = .number(r) }

        var alert: [String: JSONValue]?
        if let a = fields.alert {
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

        self.aps = aps
        self.pushToken = token
        self.priority = event == "start" || alert != nil || notification.priority == .high ? 10 : 5
    }
}
