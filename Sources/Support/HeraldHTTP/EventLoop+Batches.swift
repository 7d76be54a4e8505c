import ChannelAPI

/// Batches (loop thread): a batch starts its requests up to its limit and resumes its caller once all are done.
extension EventLoop {
    func start(_ batch: BatchJob) {
        batches[ObjectIdentifier(batch.token)] = batch
        pump(batch)
    }

    /// Starts the batch's next requests up to its limit; resumes its caller once every request is done.
    func pump(_ batch: BatchJob) {
        if stopping || batch.token.isCancelled {
            let error = stopping ? Self.shutdownError : Self.cancelledError
            while batch.next < batch.items.count {
                record(batch, batch.next, .failure(error))
                batch.next += 1
            }
        }
        while batch.inFlight < batch.limit, batch.next < batch.items.count {
            let index = batch.next
            batch.next += 1
            let item = batch.items[index]
            if let failure = launch(item.request, item.headerList, item.host, .batch(batch, index)) {
                record(batch, index, .failure(failure))
            } else {
                batch.inFlight += 1
            }
        }
        if batch.done == batch.items.count, batches.removeValue(forKey: ObjectIdentifier(batch.token)) != nil {
            batch.continuation.resume(returning: batch.results.map { $0 ?? .failure(Self.shutdownError) })
        }
    }

    func record(_ batch: BatchJob, _ index: Int, _ result: TransferResult) {
        batch.results[index] = result
        batch.done += 1
        pendingRequests.subtract(1, ordering: .relaxed)
    }

    /// Fails the batch's unstarted requests and aborts its running ones.
    func cancel(_ batch: BatchJob) {
        while batch.next < batch.items.count {
            record(batch, batch.next, .failure(Self.cancelledError))
            batch.next += 1
        }
        let removed = scheduler.removeAll { item in
            if case .batch(let b, _) = item.completion { return b === batch }
            return false
        }
        parkedCount.subtract(removed.count, ordering: .relaxed)
        for item in removed {
            if case .batch(_, let index) = item.completion {
                batch.inFlight -= 1
                record(batch, index, .failure(Self.cancelledError))
            }
        }
        for transfer in Array(byEasy.values) where transfer.batch === batch {
            finish(transfer, .failure(Self.cancelledError))
        }
        pump(batch)
    }
}
