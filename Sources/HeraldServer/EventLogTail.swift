import Foundation
import HeraldSync
import Router

/// The newest part of the store's event log, read once for every event stream of this server.
///
/// Each stream used to read the store itself on every wake-up, so 1,000 subscribers meant 1,000
/// queries per router event. Now one reader (whichever stream asks first) reads what is new after
/// ``head`` and appends it to a bounded window in memory; every stream then takes its entries from
/// the window. A stream whose position is older than the window (a client resuming from long ago)
/// reads the store directly, so nothing is ever skipped.
///
/// Each entry is kept with its Server-Sent Events frame, rendered once when it is read: every stream
/// writes the same bytes, so 1,000 subscribers cost one rendering per event, not 1,000.
final class EventLogTail: Sendable {
    /// One entry and its SSE frame (`id:`, `event:`, `data:` and the blank line).
    struct Item: Sendable {
        let entry: EventLogEntry
        let frame: [UInt8]

        init(_ entry: EventLogEntry) {
            self.entry = entry
            frame = Array("id: \(entry.sequence)\nevent: \(entry.kind)\ndata: \(entry.data.canonicalString)\n\n".utf8)
        }
    }

    struct Window {
        /// Entries with a sequence above `floor`, oldest first, complete up to `head`.
        var entries: [Item] = []
        /// The window holds every entry in (`floor`, `head`].
        var floor: Int64
        var head: Int64
        /// When the store was last read.
        var readAt: ContinuousClock.Instant
        /// The signal generation of the last read.
        var generation: Int
    }

    private let store: any HeraldStore
    private let capacity: Int
    private let window: Locked<Window>
    /// Held while one caller reads the store, so callers woken together make one query.
    private let reading = Locked(())

    /// Starts at the log's current end: entries written from now on are kept in memory, at most
    /// `capacity` of them.
    init(store: any HeraldStore, capacity: Int = 20_000) throws {
        self.store = store
        self.capacity = max(1, capacity)
        let head = try store.lastEventSequence()
        window = Locked(Window(floor: head, head: head, readAt: .now, generation: -1))
    }

    /// Entries after `since`, oldest first, at most `limit`, of `namespaces` (nil: all). Reads what
    /// is new from the store first, unless another caller has since the signal's `generation` and
    /// within the last `maxAge`.
    func entries(
        after since: Int64, namespaces: [String]?, limit: Int, generation: Int, maxAge: Duration = .milliseconds(500)
    ) throws -> [EventLogEntry] {
        try items(after: since, namespaces: namespaces, limit: limit, generation: generation, maxAge: maxAge)
            .map(\.entry)
    }

    /// ``entries(after:namespaces:limit:generation:maxAge:)`` with each entry's SSE frame.
    func items(
        after since: Int64, namespaces: [String]?, limit: Int, generation: Int, maxAge: Duration = .milliseconds(500)
    ) throws -> [Item] {
        try refresh(generation: generation, maxAge: maxAge)
        let entries = window.withLock { w -> [Item]? in
            guard since >= w.floor else { return nil }
            // Binary search for the first entry above `since`.
            var lo = 0
            var hi = w.entries.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if w.entries[mid].entry.sequence <= since { lo = mid + 1 } else { hi = mid }
            }
            var out: [Item] = []
            var i = lo
            while i < w.entries.count && out.count < limit {
                let e = w.entries[i]
                if namespaces?.contains(e.entry.namespace) ?? true { out.append(e) }
                i += 1
            }
            return out
        }
        if let entries { return entries }
        // Older than the window: the store has it (in the same order); once the caller has caught up
        // to the window, it reads from memory again.
        return try store.eventLog(after: since, namespaces: namespaces, limit: limit).map(Item.init)
    }

    /// Reads entries after ``Window/head`` from the store when the signal moved on or the window is
    /// older than `maxAge` (other processes sharing the store write no signal here).
    private func refresh(generation: Int, maxAge: Duration) throws {
        func stale() -> Bool {
            window.withLock { $0.generation != generation || ContinuousClock.now - $0.readAt >= maxAge }
        }
        guard stale() else { return }
        try reading.withLock { _ in
            guard stale() else { return }
            var head = window.withLock { $0.head }
            var fresh: [Item] = []
            while true {
                let page = try store.eventLog(after: head, namespaces: nil, limit: 1_000)
                fresh += page.map(Item.init)
                head = page.last?.sequence ?? head
                if page.count < 1_000 { break }
            }
            window.withLock { w in
                w.entries += fresh
                w.head = head
                w.readAt = .now
                w.generation = generation
                if w.entries.count > capacity {
                    let drop = w.entries.count - capacity
                    w.floor = w.entries[drop - 1].entry.sequence
                    w.entries.removeFirst(drop)
                }
            }
        }
    }
}
