import ChannelAPI
import HeraldSync
import Synchronization

/// An asynchronous HTTP client on libcurl's multi interface.
///
/// Each event loop is one thread driving one multi handle with `curl_multi_poll`/`curl_multi_perform`;
/// requests reach it through a lock-protected queue and `curl_multi_wakeup`. HTTP/2 is negotiated with
/// ALPN (falling back to HTTP/1.1), concurrent requests to one host share multiplexed connections, the
/// connection cache lives as long as the client, and easy handles are pooled. TLS verification is always on.
///
/// ```swift
/// let client = try HTTPClient()
/// let response = try await client.send(HTTPRequest(url: "https://example.com/", body: Array("{}".utf8)))
/// await client.shutdown()
/// ```
public final class HTTPClient: HTTPTransport {
    private let loops: [EventLoop]
    private let nextLoop = Atomic<Int>(0)
    private let stats = ClientStats()

    /// Creates a client and starts its event-loop threads.
    /// - Parameter configuration: The client settings.
    /// - Throws: `.invalidRequest` for an invalid configuration, `.transport` when libcurl or a thread
    ///   cannot be initialised.
    public init(configuration: HTTPClientConfiguration = .init()) throws(HTTPError) {
        if Curl.globalInitResult != 0 {
            throw HTTPError(.transport, "curl_global_init failed", curlCode: Curl.globalInitResult)
        }
        guard configuration.eventLoops >= 1 else {
            throw HTTPError(.invalidRequest, "eventLoops must be at least 1")
        }
        guard configuration.maxResponseBytes >= 0 else {
            throw HTTPError(.invalidRequest, "maxResponseBytes must not be negative")
        }
        let settings = LoopSettings(
            caFile: configuration.caFile,
            defaultTimeoutMs: Curl.milliseconds(configuration.defaultTimeout),
            connectTimeoutMs: Curl.milliseconds(configuration.connectTimeout),
            maxResponseBytes: configuration.maxResponseBytes,
            maxConnectionsPerHost: configuration.maxConnectionsPerHost,
            maxConcurrentStreams: configuration.maxConcurrentStreams,
            userAgent: configuration.userAgent,
            corkLimit: configuration.coalescesWrites ? CorkedSockets.defaultLimit : 0)
        var loops: [EventLoop] = []
        do {
            for _ in 0..<configuration.eventLoops {
                let loop = try EventLoop(settings: settings, stats: stats)
                try loop.start()
                loops.append(loop)
            }
        } catch {
            for loop in loops { loop.detach() }
            throw error
        }
        self.loops = loops
    }

    deinit {
        for loop in loops { loop.detach() }
    }

    /// Sends one request and waits for its response.
    ///
    /// Any HTTP status is returned as a response. Cancelling the calling task aborts the transfer.
    /// Inside a ``RequestTimeoutScope`` the request's timeout is at most the scope's limit.
    /// - Parameter request: The request.
    /// - Returns: The final response.
    /// - Throws: An ``HTTPError``: `.cancelled` when the task is cancelled, `.shutdown` after ``shutdown()``,
    ///   `.timeout`, `.connectFailed`, `.tls`, `.responseTooLarge`, `.invalidRequest` or `.transport`.
    public func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let request = RequestTimeoutScope.applied(to: request)
        try Curl.validate(request)
        let loop =
            loops.first(where: \.isLoopThread)
            ?? loops[nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
        let token = RequestToken()
        let headerList = HeaderList(request.headers)
        let result = await withTaskCancellationHandler {
            // Unsafe (unchecked) continuation: every Job is resumed exactly once, by whichever of submit,
            // begin, finish or the shutdown path takes it out of the loop's bookkeeping.
            await withUnsafeContinuation { (continuation: UnsafeContinuation<TransferResult, Never>) in
                guard token.markSubmitted() else {
                    continuation.resume(returning: .failure(EventLoop.cancelledError))
                    return
                }
                loop.submit(
                    Job(
                        request: request, headerList: headerList, host: HostKey.of(request.url), token: token,
                        continuation: continuation))
            }
        } onCancel: {
            if token.cancel() { loop.cancel(token) }
        }
        return try result.get().response()
    }

    /// Sends many requests through one event loop, with at most `maxInFlight` of them in flight at once,
    /// and waits for all of them.
    ///
    /// This is the fan-out path: the loop starts the next request as soon as one finishes, and the caller
    /// is resumed once with every result. Building the requests and parsing the responses happen on the
    /// calling task's thread, so the event loop only drives libcurl. Results keep the order of `requests`;
    /// an invalid request fails alone with `.invalidRequest`. Cancelling the calling task aborts every
    /// request of the batch that has not finished.
    /// - Parameters:
    ///   - requests: The requests.
    ///   - maxInFlight: Most requests of this batch in flight at once (at least 1).
    /// - Returns: One result per request, in order: the response (any HTTP status), or the ``HTTPError``
    ///   that ``send(_:)`` would have thrown.
    public func send(all requests: [HTTPRequest], maxInFlight: Int) async -> [Result<HTTPResponse, HTTPError>] {
        var results = [Result<HTTPResponse, HTTPError>?](repeating: nil, count: requests.count)
        var items: [BatchItem] = []
        var positions: [Int] = []
        items.reserveCapacity(requests.count)
        positions.reserveCapacity(requests.count)
        for (i, request) in requests.enumerated() {
            let request = RequestTimeoutScope.applied(to: request)
            do throws(HTTPError) {
                try Curl.validate(request)
                items.append(
                    BatchItem(
                        request: request, headerList: HeaderList(request.headers), host: HostKey.of(request.url))
                )
                positions.append(i)
            } catch {
                results[i] = .failure(error)
            }
        }
        if !items.isEmpty {
            let loop = loops.first(where: \.isLoopThread) ?? leastLoaded()
            let token = RequestToken()
            let count = items.count
            let raw = await withTaskCancellationHandler {
                // Unsafe continuation: the loop resumes a batch exactly once, when its last request is done
                // (or at once, when the loop has stopped).
                await withUnsafeContinuation { (continuation: UnsafeContinuation<[TransferResult], Never>) in
                    guard token.markSubmitted() else {
                        continuation.resume(
                            returning: Array(repeating: .failure(EventLoop.cancelledError), count: count))
                        return
                    }
                    loop.submit(BatchJob(items: items, limit: maxInFlight, token: token, continuation: continuation))
                }
            } onCancel: {
                if token.cancel() { loop.cancel(token) }
            }
            for (k, result) in raw.enumerated() { results[positions[k]] = result.map { $0.response() } }
        }
        return results.map { $0 ?? .failure(EventLoop.shutdownError) }
    }

    /// The loop with the fewest requests in hand (ties go round-robin), so that concurrent batches
    /// spread evenly even when they finish at different times.
    private func leastLoaded() -> EventLoop {
        let start = nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue
        var best = loops[start % loops.count]
        var bestLoad = best.load
        for k in 1..<loops.count {
            let candidate = loops[(start + k) % loops.count]
            let load = candidate.load
            if load < bestLoad {
                best = candidate
                bestLoad = load
            }
        }
        return best
    }

    /// Shuts the client down: in-flight and queued requests fail with `.shutdown`, the loop threads are
    /// joined and every libcurl handle is freed. Later calls to ``send(_:)`` throw `.shutdown`.
    /// Calling it again does nothing.
    public func shutdown() async {
        for loop in loops { await loop.shutdown() }
    }

    /// An executor that runs tasks on one of the client's event-loop threads (chosen round-robin).
    ///
    /// Code that mostly issues requests, such as a sender draining a queue, can run there with
    /// `withTaskExecutorPreference(client.taskExecutor()) { ... }` or
    /// `group.addTask(executorPreference: client.taskExecutor()) { ... }`: its requests then go straight to
    /// that loop and responses resume it without a hop to another thread. Such code must not block, since
    /// it shares the thread with every transfer of that loop. After ``shutdown()`` the tasks continue on
    /// the global concurrent executor.
    /// - Returns: The executor of the next event loop.
    public func taskExecutor() -> any TaskExecutor {
        loops[nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
    }

    /// Total connections this client has opened (the sum of `CURLINFO_NUM_CONNECTS` over finished
    /// transfers); tests use it to prove connection reuse.
    public var connectionsOpened: Int { stats.connectionsOpened.load(ordering: .relaxed) }

    /// Requests waiting in the event loops' per-host queues right now: their host already has every
    /// stream (HTTP/2) or connection (HTTP/1.1) it may use busy. A lasting backlog here means the
    /// host answers slower than Herald sends.
    public var waitingRequests: Int { loops.reduce(0) { $0 + $1.waiting } }

    /// Connection sockets held corked right now (see ``HTTPClientConfiguration/coalescesWrites``); tests
    /// use it to prove every corked socket is closed by ``shutdown()``.
    public var corkedSockets: Int { stats.socketsCorked.load(ordering: .relaxed) }
}
