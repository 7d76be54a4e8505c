import ChannelAPI

extension Router {
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
}
