import ChannelAPI
import HeraldSync

/// Parsed subscriptions by their registration text, so a fan-out does not re-decode base64,
/// re-import and re-check the P-256 point and re-parse the endpoint URL for every message.
/// The key is the subscription's endpoint and key strings plus the allow-list, so a changed
/// registration or config is parsed (and validated) afresh.
final class SubscriptionCache: Sendable {
    private let entries = Locked<[String: WebPushSubscription]>([:])
    static let capacity = 50_000

    func subscription(for device: Device, allowHosts: [String]) throws(ValidationError) -> WebPushSubscription {
        let sub = device.fields["subscription"]
        let keys = sub?["keys"]
        let key = [
            sub?["endpoint"]?.stringValue ?? "", keys?["p256dh"]?.stringValue ?? "", keys?["auth"]?.stringValue ?? "",
            allowHosts.joined(separator: ","),
        ].joined(separator: "\u{0}")
        if let hit = entries.withLock({ $0[key] }) { return hit }
        let parsed = try WebPushSubscription(device: device, allowHosts: allowHosts)
        entries.withLock { cache in
            if cache.count >= SubscriptionCache.capacity { cache.removeAll(keepingCapacity: true) }
            cache[key] = parsed
        }
        return parsed
    }
}
