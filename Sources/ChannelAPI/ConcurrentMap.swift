/// The sliding window every sending channel needs: run `body` for each item with at most `limit`
/// in flight, starting the next as soon as one finishes. Results keep the input order.
public enum ConcurrentMap {
    /// Maps `items` through `body` with at most `limit` concurrent calls.
    ///
    /// A batch of plain HTTP requests needs no window of tasks: build them all and call
    /// `HTTPClient.send(all:maxInFlight:)`, whose event loop keeps the window itself.
    /// This map is for work that is more than one request per item (a request that needs its own
    /// follow-up, or chunks of CPU work each ending in a batch).
    /// - Parameter executor: where the calls (and the window that starts them) run. Pass
    ///   `context.http.taskExecutor()` for calls that issue requests one by one: they then reach
    ///   libcurl without a thread hop. Leave it nil for CPU-heavy work (encryption), which belongs on
    ///   the global executor.
    public static func map<T: Sendable, R: Sendable>(
        _ items: [T], limit: Int, executor: (any TaskExecutor)? = nil,
        _ body: @escaping @Sendable (T) async -> R
    ) async -> [R] {
        guard !items.isEmpty else { return [] }
        if let executor {
            return await withTaskExecutorPreference(executor) {
                await window(items, limit: limit, executor: executor, body)
            }
        }
        return await window(items, limit: limit, executor: nil, body)
    }

    private static func window<T: Sendable, R: Sendable>(
        _ items: [T], limit: Int, executor: (any TaskExecutor)?, _ body: @escaping @Sendable (T) async -> R
    ) async -> [R] {
        await withTaskGroup(of: (Int, R).self) { group in
            var results = [R?](repeating: nil, count: items.count)
            var next = 0
            func start() {
                let i = next
                next += 1
                group.addTask(executorPreference: executor) { (i, await body(items[i])) }
            }
            while next < items.count, next < max(1, limit) { start() }
            while let (i, r) = await group.next() {
                results[i] = r
                if next < items.count { start() }
            }
            return results.compactMap { $0 }
        }
    }
}
