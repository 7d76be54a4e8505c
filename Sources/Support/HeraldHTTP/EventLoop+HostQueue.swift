import ChannelAPI

/// The per-host queue (loop thread): requests that wait for a free stream or connection of their host.
extension EventLoop {
    /// Starts waiting requests of `host` while it has free streams. A failed start may queue newer
    /// requests meanwhile (its batch starts its next one); they wait behind the older ones.
    func startParked(_ host: String) {
        guard !stopping else { return }
        while let item = scheduler.nextReady(host) {
            parkedCount.subtract(1, ordering: .relaxed)
            if let failure = launch(item.request, item.headerList, item.host, item.completion, parking: false) {
                fail(item.completion, failure)
            }
        }
    }

    /// Removes the waiting single request of `token`, if it waits.
    func unparkSingle(_ token: RequestToken) -> ParkedRequest? {
        let item = scheduler.removeFirst { item in
            if case .single(let t, _) = item.completion { return t === token }
            return false
        }
        if item != nil { parkedCount.subtract(1, ordering: .relaxed) }
        return item
    }

    /// Reports a request that never reached libcurl (or failed to start) to whoever waits for it.
    func fail(_ completion: Completion, _ error: HTTPError) {
        switch completion {
        case .single(_, let continuation):
            continuation.resume(returning: .failure(error))
        case .batch(let batch, let index):
            batch.inFlight -= 1
            record(batch, index, .failure(error))
            pump(batch)
        }
    }
}
