import ChannelAPI
import ChannelSupport

/// The APNs Live Activity push for a site's push (pure): `apns-push-type: liveactivity` (the apns
/// channel adds `.push-type.liveactivity` to its topic), priority 10 with an alert and 5 without.
///
/// - `start` (to the phone's push-to-start token): `event`, `timestamp`, `content-state`,
///   `attributes-type`, `attributes` `{site, ref}`, `alert`, and `stale-date`/`relevance-score`.
/// - `update`/`end` (to the activity's token): `event`, `timestamp`, `content-state`, `stale-date`,
///   `dismissal-date` (end), `relevance-score`, and `alert` unless dropped by the alert limit.
///
/// `content-state` is the site's `contentState` with `site` set to the site's name. The alert is
/// `{title: site name, body, sound: default}`. Without a `relevanceScore` the relay scores by update
/// time (the push's `timestamp`), so the most recently updated activity leads (the guide: 由中转按更新时间处理).
enum PulseLiveActivityPush {
    /// The largest APNs payload.
    static let maxPayloadBytes = 4096
    /// APNs keeps an undelivered push this long after the relay sent it (s).
    static let expiry: Int64 = 3600

    static func make(
        _ body: PulseActivityBody, site: String, attributesType: String, dropAlert: Bool, now: Int64
    ) throws(PulseRefusal) -> PreparedPush {
        var state = body.contentState
        state["site"] = .string(site)
        var aps: [String: JSONValue] = [
            "event": .string(body.event), "timestamp": .number(Double(body.timestamp)),
            "content-state": .object(state),
            "relevance-score": .number(body.relevanceScore ?? Double(body.timestamp)),
        ]
        if let s = body.staleDate { aps["stale-date"] = .number(Double(s)) }
        if let d = body.dismissalDate { aps["dismissal-date"] = .number(Double(d)) }
        if body.event == "start" {
            aps["attributes-type"] = .string(attributesType)
            aps["attributes"] = ["site": .string(site), "ref": .string(body.ref)]
        }
        let alert = dropAlert ? nil : body.alert
        if let alert { aps["alert"] = ["title": .string(site), "body": .string(alert), "sound": "default"] }
        let payload: JSONValue = ["aps": .object(aps)]
        let size = payload.canonicalBytes.count
        guard size <= maxPayloadBytes else {
            throw .bad(
                "the Live Activity push would be \(size) bytes, over APNs' \(maxPayloadBytes)", code: "too_large")
        }
        return PreparedPush(
            pushType: "liveactivity", priority: alert == nil ? 5 : 10, expiration: now + expiry,
            collapseID: nil, payload: payload)
    }
}
