import ChannelAPI

extension HeraldStore {
    /// Records each event as ``recordEvent(_:)`` does, each in its own transaction, and returns one
    /// result per event, in input order. ``SQLiteStore`` and ``PostgresStore`` override it with one
    /// transaction for the whole batch (group commit); this default serves other stores (wrappers in
    /// tests).
    public func recordEvents(_ events: [LifecycleEvent]) throws -> [Result<LifecycleEvent, any Error>] {
        events.map { event in Result { try recordEvent(event) } }
    }
}
