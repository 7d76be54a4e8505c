import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldSync

extension Router {
    // MARK: Lifecycle

    /// Records a lifecycle event (received, tapped, dismissed, action) against a notification.
    @discardableResult
    public func recordEvent(_ event: ChannelEvent) throws -> LifecycleEvent {
        let stored = try store.recordEvent(LifecycleEvent(event: event, at: options.clock.now()))
        hub.emit(.lifecycle(stored))
        return stored
    }

    /// Records lifecycle events as ``recordEvent(_:)`` does, all in one store transaction (group
    /// commit: `herald serve` gathers the events that arrive while the previous batch commits, such
    /// as the apps' confirmations of local pushes), and returns one result per event, in input order.
    /// An event of an unknown notification fails alone; when the batch cannot be stored at all,
    /// every event fails with that error.
    public func recordEvents(batch events: [ChannelEvent]) -> [Result<LifecycleEvent, any Error>] {
        let now = options.clock.now()
        let records = events.map { LifecycleEvent(event: $0, at: now) }
        let results: [Result<LifecycleEvent, any Error>]
        do {
            results = try store.recordEvents(records)
        } catch {
            return events.map { _ in .failure(error) }
        }
        for case .success(let stored) in results { hub.emit(.lifecycle(stored)) }
        return results
    }

    /// Waits for the first `action` event of a notification: returns at once when one was already
    /// recorded, nil when `timeout` passes first.
    public func waitForAction(notificationID: String, timeout: Duration) async throws -> LifecycleEvent? {
        let stream = hub.subscribe()
        if let e = try store.events(notificationId: notificationID).first(where: { $0.kind == .action }) { return e }
        guard try store.notification(id: notificationID) != nil else {
            throw StoreError.unknownNotification(notificationID)
        }
        return await Executor.withTimeout(timeout) {
            for await event in stream {
                if case .lifecycle(let e) = event, e.notificationId == notificationID, e.kind == .action { return e }
            }
            return nil
        } ?? nil
    }

    /// An engagement signal: the person looked, so the namespace's pending-tags badge resets.
    public func engaged(namespace: String) throws { try store.clearBadge(namespace: namespace) }

    /// The namespace's current pending-tags count.
    public func pendingBadge(namespace: String) throws -> Int { try store.pendingTagCount(namespace: namespace) }

    /// Notifications with their deliveries and events, newest first.
    public func history(namespace: String? = nil, id: String? = nil, limit: Int = 50) throws -> [HistoryEntry] {
        try store.history(namespace: namespace, id: id, limit: limit)
    }

    /// The page of `namespace`'s history after the notification `before` (newest first), read by
    /// its position: the same cost at any depth. Nil when `before` is not in `namespace`.
    public func history(namespace: String, before: String, limit: Int = 50) throws -> [HistoryEntry]? {
        try store.history(namespace: namespace, before: before, limit: limit)
    }
}
