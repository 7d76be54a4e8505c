import HeraldSync

/// Hands the deliveries of one (notification, channel) batch to the executor's chunks in flight:
/// from a fixed list (due retries), or claimed from the store a page at a time as the chunks need
/// them (a step's first attempts), so a 100,000-device fan-out is never claimed, or held, all at once.
///
/// ``held`` is what the lease heartbeat renews: the rows claimed and not yet recorded.
final class ChunkSource: Sendable {
    private struct State {
        var buffer: ArraySlice<DeliveryRecord> = []
        /// Where the next page starts; nil once the store said no more follow (or for a fixed list).
        var next: Int64? = 0
        var held: Set<String> = []
    }

    private let state: Locked<State>
    private let chunkSize: Int
    private let claim: (@Sendable (Int64) throws -> ClaimPage)?

    /// A source over a fixed list.
    init(_ records: [DeliveryRecord], chunkSize: Int) {
        self.chunkSize = max(1, chunkSize)
        claim = nil
        state = Locked(State(buffer: records[...], next: nil, held: Set(records.map(\.id))))
    }

    /// A source that claims pages with `claim` (given the previous page's ``ClaimPage/next``, 0 first).
    init(chunkSize: Int, claim: @escaping @Sendable (Int64) throws -> ClaimPage) {
        self.chunkSize = max(1, chunkSize)
        self.claim = claim
        state = Locked(State())
    }

    /// The next chunk of at most `chunkSize` deliveries, claiming a page when the buffer is empty; nil
    /// when none are left. A claim failure is thrown (nothing was claimed by it).
    func next() throws -> [DeliveryRecord]? {
        try state.withLock { s in
            while s.buffer.isEmpty {
                guard let after = s.next, let claim else { return nil }
                let page = try claim(after)
                s.next = page.records.isEmpty ? nil : page.next
                s.buffer = page.records[...]
                for r in page.records { s.held.insert(r.id) }
            }
            let chunk = Array(s.buffer.prefix(chunkSize))
            s.buffer = s.buffer.dropFirst(chunk.count)
            return chunk
        }
    }

    /// Marks a chunk's rows as recorded (their leases need no more renewal).
    func finished(_ chunk: [DeliveryRecord]) {
        state.withLock { s in for r in chunk { s.held.remove(r.id) } }
    }

    /// The rows claimed and not yet recorded.
    var held: [String] { state.withLock { Array($0.held) } }
}
