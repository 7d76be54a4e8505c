import ChannelAPI
import HeraldSync
import Synchronization

/// What an embedder can observe through ``Router/events()``.
public enum RouterEvent: Sendable {
    /// A delivery changed state (attempted, suppressed, gave up).
    case delivery(DeliveryRecord)
    /// A device was removed because its channel said the token is gone.
    case deviceRemoved(Device, channel: String, reason: String)
    /// A lifecycle event (received, tapped, dismissed, action) was recorded.
    case lifecycle(LifecycleEvent)
    /// The config was reloaded.
    case reloaded(warnings: [ConfigWarning])
    /// A reload was refused; the old graph stays.
    case reloadFailed(ConfigError)
}

/// Fans events out to every subscriber.
final class EventHub: Sendable {
    private let subscribers = Locked<[Int: AsyncStream<RouterEvent>.Continuation]>([:])
    private let nextId = Atomic<Int>(0)

    func subscribe() -> AsyncStream<RouterEvent> {
        let id = nextId.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream<RouterEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { _ = $0.removeValue(forKey: id) }
        }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    func emit(_ event: RouterEvent) {
        let all = subscribers.withLock { Array($0.values) }
        for c in all { c.yield(event) }
    }

    var hasSubscribers: Bool { subscribers.withLock { !$0.isEmpty } }

    func finish() {
        let all = subscribers.withLock { s in
            let v = Array(s.values)
            s.removeAll()
            return v
        }
        for c in all { c.finish() }
    }
}
