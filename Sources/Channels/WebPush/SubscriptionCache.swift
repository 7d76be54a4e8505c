import ChannelAPI
import HeraldSync

/// Parsed subscriptions by their registration text, so repeated notifications to the same
/// subscribers do not re-decode base64, re-import and re-check the P-256 point and re-parse the
/// endpoint URL for every message. The key is the subscription's endpoint and key strings plus the
/// allow-list, so a changed registration or config is parsed (and validated) afresh.
///
/// The cache is bounded, because each entry holds an imported OpenSSL key (about 1.5 kB with its
/// strings) and a fan-out meets each subscription once: it keeps two generations of at most
/// ``generationSize`` entries. A lookup finds an entry in either (one found in the older is moved
/// to the current); when the current one is full it becomes the older and the older is dropped. So
/// a small audience notified again and again stays parsed, and a fan-out to 100,000 browsers holds
/// at most twice ``generationSize`` keys, not one per browser.
final class SubscriptionCache: Sendable {
    private struct Generations {
        var current: [String: WebPushSubscription] = [:]
        var older: [String: WebPushSubscription] = [:]
    }

    private let entries = Locked(Generations())
    /// Entries per generation.
    let generationSize: Int

    /// A cache keeping at most `2 × generationSize` subscriptions.
    init(generationSize: Int = 1_024) {
        self.generationSize = max(1, generationSize)
    }

    /// The subscriptions held now (both generations).
    var count: Int { entries.withLock { $0.current.count + $0.older.count } }

    func subscription(for device: Device, allowHosts: [String]) throws(ValidationError) -> WebPushSubscription {
        let sub = device.fields["subscription"]
        let keys = sub?["keys"]
        let key = [
            sub?["endpoint"]?.stringValue ?? "", keys?["p256dh"]?.stringValue ?? "", keys?["auth"]?.stringValue ?? "",
            allowHosts.joined(separator: ","),
        ].joined(separator: "\u{0}")
        let hit = entries.withLock { g -> WebPushSubscription? in
            if let found = g.current[key] { return found }
            guard let found = g.older.removeValue(forKey: key) else { return nil }
            insert(found, key, into: &g)
            return found
        }
        if let hit { return hit }
        let parsed = try WebPushSubscription(device: device, allowHosts: allowHosts)
        entries.withLock { insert(parsed, key, into: &$0) }
        return parsed
    }

    private func insert(_ subscription: WebPushSubscription, _ key: String, into g: inout Generations) {
        if g.current.count >= generationSize && g.current[key] == nil {
            g.older = g.current
            g.current = [:]
        }
        g.current[key] = subscription
    }
}
