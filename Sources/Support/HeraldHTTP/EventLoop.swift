import CCurl
import CHeraldShims
import ChannelAPI
import HeraldSync
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One thread driving one libcurl multi handle.
///
/// `@unchecked Sendable` because it holds the raw multi handle and loop-thread-only bookkeeping:
/// - `multi`, `transfers`, `byEasy` and `pool` are touched only by the loop thread (inside ``run()``),
///   except `curl_multi_wakeup`, which libcurl documents as callable from any thread; it is only called
///   while holding `shared` and only before `stopRequested` is set, after which the thread may clean up.
/// - Everything other threads touch lives in the `shared` mutex or is immutable.
///
/// This file holds the thread, its queues and the round (`curl_multi_perform`, finishing transfers);
/// the loop-thread jobs it calls are in `EventLoop+Launch` (starting a transfer), `+HostQueue` (the
/// per-host waiting line), `+Batches`, `+Corking`, and `+TaskExecutor` (tasks run on the loop).
final class EventLoop: @unchecked Sendable {
    struct Shared {
        var pending: [Work] = []
        var executorJobs: [UnownedJob] = []
        var cancels: [RequestToken] = []
        var wakeupPending = false
        var stopRequested = false
        var exited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
        var thread: pthread_t?
    }

    let multi: UnsafeMutableRawPointer
    let settings: LoopSettings
    let stats: ClientStats
    let shared = Locked(Shared())

    // Loop-thread-only state.
    /// Single requests in flight, by their token (for cancellation).
    var transfers: [ObjectIdentifier: Transfer] = [:]
    /// Batches with requests still to start or in flight, by their token.
    var batches: [ObjectIdentifier: BatchJob] = [:]
    var byEasy: [UnsafeMutableRawPointer: Transfer] = [:]
    var pool: [EasyHandle] = []
    /// Connection sockets held corked during a round and pushed before the loop waits.
    var corked: CorkedSockets
    /// Set when a transfer ends (libcurl may write, say an `RST_STREAM`, as it lets go of it): the round
    /// pushes the corked sockets even if no transfer is left.
    var unflushed = false
    /// Set once the loop is stopping: batches then fail their unstarted requests instead of starting them.
    var stopping = false
    /// Which requests of each host (``HostKey``) go to libcurl now and which wait, in arrival order.
    var scheduler: HostScheduler<ParkedRequest>
    /// Requests waiting in `scheduler` (read by other threads for ``HTTPClient/waitingRequests``).
    let parkedCount = Atomic<Int>(0)
    /// Executor jobs enqueued from the loop thread itself (resumed callers); run before the next poll.
    var localJobs: [UnownedJob] = []
    var exiting = false
    /// Requests of batches submitted to this loop and not yet finished (read by other threads to
    /// place the next batch).
    let pendingRequests = Atomic<Int>(0)
    /// The loop thread's id, set once when it starts; 0 before.
    let loopThreadID = Atomic<UInt>(0)
    /// A NUL byte that `CURLOPT_POSTFIELDS` points at for an empty body (a null pointer would make libcurl
    /// read the body from stdin).
    let emptyBody: UnsafeMutablePointer<CChar>

    init(settings: LoopSettings, stats: ClientStats) throws(HTTPError) {
        guard let multi = curl_multi_init() else { throw HTTPError(.transport, "curl_multi_init failed") }
        self.multi = multi
        emptyBody = .allocate(capacity: 1)
        emptyBody.initialize(to: 0)
        self.settings = settings
        self.stats = stats
        corked = CorkedSockets(limit: max(0, settings.corkLimit))
        scheduler = HostScheduler(
            connectionsPerHost: settings.maxConnectionsPerHost, streamsPerConnection: settings.maxConcurrentStreams)
        _ = herald_curl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = herald_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, settings.maxConnectionsPerHost))
        _ = herald_curl_multi_setopt_long(
            multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, settings.maxConcurrentStreams))
    }

    deinit { emptyBody.deallocate() }

    /// Starts the loop thread. On failure the multi handle is freed.
    func start() throws(HTTPError) {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let loop = Unmanaged<EventLoop>.fromOpaque(context).takeRetainedValue()
                loop.run()
                return nil
            }, context)
        if rc != 0 {
            Unmanaged<EventLoop>.fromOpaque(context).release()
            curl_multi_cleanup(multi)
            throw HTTPError(.transport, "could not start an event-loop thread (errno \(rc))")
        }
        shared.withLock { $0.thread = thread }
    }

    /// Hands a job to the loop; resumes it with `.shutdown` when the loop is stopping.
    func submit(_ job: Job) {
        if isLoopThread && !exiting {
            // Called from a task running on this loop: no queue, lock or wakeup needed.
            begin(job)
            return
        }
        if !enqueue(.single(job)) { job.continuation.resume(returning: .failure(Self.shutdownError)) }
    }

    /// Requests waiting in this loop's per-host queues for a free stream or connection.
    var waiting: Int { parkedCount.load(ordering: .relaxed) }

    /// Requests of batches this loop holds: queued, waiting or in flight.
    var load: Int { pendingRequests.load(ordering: .relaxed) }

    /// Hands a batch to the loop; resumes it with `.shutdown` for every request when the loop is stopping.
    func submit(_ batch: BatchJob) {
        pendingRequests.add(batch.items.count, ordering: .relaxed)
        if isLoopThread && !exiting {
            start(batch)
            return
        }
        if !enqueue(.batch(batch)) {
            pendingRequests.subtract(batch.items.count, ordering: .relaxed)
            batch.continuation.resume(
                returning: Array(repeating: .failure(Self.shutdownError), count: batch.items.count))
        }
    }

    func enqueue(_ work: Work) -> Bool {
        shared.withLock { shared in
            if shared.stopRequested { return false }
            shared.pending.append(work)
            wakeLocked(&shared)
            return true
        }
    }

    /// Asks the loop to abort the transfer (or batch) belonging to `token`, if it still runs.
    func cancel(_ token: RequestToken) {
        shared.withLock { shared in
            if shared.stopRequested { return }
            shared.cancels.append(token)
            wakeLocked(&shared)
        }
    }

    /// Asks the loop to stop: in-flight and queued requests fail with `.shutdown`.
    func requestStop() {
        shared.withLock { shared in
            if shared.stopRequested { return }
            wakeLocked(&shared)
            shared.stopRequested = true
        }
    }

    /// Stops the loop, waits until its thread has freed every handle, and joins it.
    func shutdown() async {
        requestStop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = shared.withLock { shared in
                if !shared.exited { shared.exitWaiters.append(continuation) }
                return shared.exited
            }
            if exited { continuation.resume() }
        }
        if let thread = takeThread() { pthread_join(thread, nil) }
    }

    /// Stops the loop without waiting (used when a client is dropped without `shutdown()`).
    func detach() {
        requestStop()
        if let thread = takeThread() { pthread_detach(thread) }
    }

    /// Takes the thread handle so that exactly one caller joins or detaches it.
    func takeThread() -> pthread_t? {
        shared.withLock { shared in
            defer { shared.thread = nil }
            return shared.thread
        }
    }

    func wakeLocked(_ shared: inout Shared) {
        if !shared.wakeupPending {
            shared.wakeupPending = true
            _ = curl_multi_wakeup(multi)
        }
    }

    static let shutdownError = HTTPError(.shutdown, "the HTTP client has been shut down")
    static let cancelledError = HTTPError(.cancelled, "the request was cancelled")

    /// Whether the caller runs on this loop's thread.
    var isLoopThread: Bool {
        let id = loopThreadID.load(ordering: .relaxed)
        return id != 0 && pthread_equal(pthread_t(id), pthread_self()) != 0
    }

    // MARK: - Loop thread

    func runExecutorJobs(_ jobs: [UnownedJob]) {
        let executor = asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
    }

    func run() {
        loopThreadID.store(UInt(pthread_self()), ordering: .relaxed)
        var running: Int32 = 0
        while true {
            let (jobs, executorJobs, cancels, stop) = shared.withLock { shared in
                defer {
                    shared.pending.removeAll(keepingCapacity: true)
                    shared.executorJobs.removeAll(keepingCapacity: true)
                    shared.cancels.removeAll(keepingCapacity: true)
                    shared.wakeupPending = false
                }
                return (shared.pending, shared.executorJobs, shared.cancels, shared.stopRequested)
            }
            runExecutorJobs(executorJobs)
            while !localJobs.isEmpty {
                let batch = localJobs
                localJobs.removeAll(keepingCapacity: true)
                runExecutorJobs(batch)
            }
            for work in jobs {
                switch work {
                case .single(let job): begin(job)
                case .batch(let batch): start(batch)
                }
            }
            for token in cancels {
                if let transfer = transfers[ObjectIdentifier(token)] {
                    finish(transfer, .failure(Self.cancelledError))
                } else if let waiting = unparkSingle(token) {
                    if case .single(_, let continuation) = waiting.completion {
                        continuation.resume(returning: .failure(Self.cancelledError))
                    }
                } else if let batch = batches[ObjectIdentifier(token)] {
                    cancel(batch)
                }
            }
            if stop { break }
            _ = curl_multi_perform(multi, &running)
            drainMessages()
            // What this round wrote leaves now, in as few segments as it fills. A round without transfers
            // (tasks running on this loop's executor, the idle timeout) wrote nothing and pays nothing.
            if unflushed || !byEasy.isEmpty {
                corked.flush()
                unflushed = false
            }
            // Callers resumed onto this loop run at the top of the next round, without blocking first.
            if localJobs.isEmpty { _ = curl_multi_poll(multi, nil, 0, 1000, nil) }
        }
        // Stopping: no job can be queued any more and nobody calls curl_multi_wakeup.
        stopping = true
        let leftovers = shared.withLock { shared in
            defer { shared.pending.removeAll() }
            return shared.pending
        }
        for work in leftovers {
            switch work {
            case .single(let job): job.continuation.resume(returning: .failure(Self.shutdownError))
            case .batch(let batch):
                pendingRequests.subtract(batch.items.count, ordering: .relaxed)
                batch.continuation.resume(
                    returning: Array(repeating: .failure(Self.shutdownError), count: batch.items.count))
            }
        }
        let waiting = scheduler.removeAllWaiting()
        parkedCount.store(0, ordering: .relaxed)
        for item in waiting { fail(item.completion, Self.shutdownError) }
        for transfer in Array(byEasy.values) { finish(transfer, .failure(Self.shutdownError)) }
        for batch in Array(batches.values) { pump(batch) }
        pool.removeAll()
        curl_multi_cleanup(multi)
        // Tasks that prefer this loop keep running on the global executor from now on.
        exiting = true
        let stranded =
            localJobs
            + shared.withLock { shared in
                defer { shared.executorJobs.removeAll() }
                return shared.executorJobs
            }
        localJobs.removeAll()
        for job in stranded { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        let waiters = shared.withLock { shared in
            shared.exited = true
            defer { shared.exitWaiters.removeAll() }
            return shared.exitWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Finishes every completed transfer.
    func drainMessages() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let transfer = byEasy[easy]
            else { continue }
            let code = message.pointee.data.result
            finish(transfer, result(of: transfer, code: code))
        }
    }

    func result(of transfer: Transfer, code: CURLcode) -> TransferResult {
        let handle = transfer.easy.handle
        guard code == CURLE_OK else {
            if let blocked = transfer.blockedAddress {
                return .failure(
                    HTTPError(
                        .blockedAddress,
                        "refused to connect to \(blocked): this URL may only reach public addresses unless allow-hosts names its host",
                        curlCode: Int(code.rawValue)))
            }
            return .failure(Curl.error(for: code, message: transfer.easy.errorText, tooLarge: transfer.tooLarge))
        }
        var status = 0
        var version = 0
        _ = herald_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        _ = herald_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        let httpVersion: HTTPVersion =
            switch version {
            case Int(CURL_HTTP_VERSION_2_0): .http2
            case Int(CURL_HTTP_VERSION_1_1), Int(CURL_HTTP_VERSION_1_0): .http1_1
            default: .other
            }
        return .success(
            RawResponse(status: status, version: httpVersion, headerBytes: transfer.headerBytes, body: transfer.body))
    }

    /// Removes a transfer from the multi handle, recycles its easy handle and resumes its caller.
    func finish(_ transfer: Transfer, _ result: TransferResult) {
        let handle = transfer.easy.handle
        if corked.limit > 0, corked.sockets.count < corked.limit { corkConnection(of: handle) }
        _ = curl_multi_remove_handle(multi, handle)
        unflushed = true
        let version: HTTPVersion? = if case .success(let raw) = result { raw.version } else { nil }
        scheduler.finished(transfer.host, version: version)
        var connects = 0
        if herald_curl_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK, connects > 0 {
            stats.connectionsOpened.add(connects, ordering: .relaxed)
        }
        transfer.releaseHeaders()
        byEasy[handle] = nil
        pool.append(transfer.easy)
        switch transfer.completion {
        case .single(let token, let continuation):
            transfers[ObjectIdentifier(token)] = nil
            continuation.resume(returning: result)
        case .batch(let batch, let index):
            batch.inFlight -= 1
            record(batch, index, result)
            pump(batch)
        }
        startParked(transfer.host)
    }

}
