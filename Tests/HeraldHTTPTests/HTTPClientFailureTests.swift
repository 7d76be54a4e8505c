import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldHTTPTesting
import Testing

/// HTTPClient under failure and at its limits: timeouts, cancellation, large and over-limit bodies, TLS
/// verification, refused connections, shutdown, several event loops and malformed requests.
@Suite("HTTPClient failures and limits", .serialized, .stopsFakeHTTPServers)
struct HTTPClientFailureTests {
    @Test("A request exceeding its timeout fails with .timeout and the client keeps working")
    func perRequestTimeout() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        try await server.route("/slow", [FakeHTTPResponse(status: 200, delay: .seconds(10))])
        try await server.route("/fast", [.json(200, "{}")])
        // Warm the connection so that the timeout measures the response, not the handshake.
        #expect(try await client.send(HTTPRequest(url: server.baseURL + "/fast")).status == 200)

        let error = await httpError {
            try await client.send(HTTPRequest(url: server.baseURL + "/slow", timeout: .milliseconds(800)))
        }
        #expect(error?.code == .timeout)
        #expect(error?.isTransient == true)
        #expect(error?.curlCode == 28)
        // No duration: the code is .timeout, so the 10 s answer was not waited for.

        let after = try await client.send(HTTPRequest(url: server.baseURL + "/fast"))
        #expect(after.status == 200)
        await client.shutdown()
        await server.stop()
    }

    @Test("A RequestTimeoutScope limits every request sent in it, single and batched; a shorter own timeout wins")
    func scopedTimeout() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        try await server.route("/slow", [FakeHTTPResponse(status: 200, delay: .seconds(10))])
        try await server.route("/fast", [.json(200, "{}")])
        #expect(try await client.send(HTTPRequest(url: server.baseURL + "/fast")).status == 200)

        let (single, batch) = await RequestTimeoutScope.$limit.withValue(.milliseconds(700)) {
            // Without the scope these would wait for the client's default of 30 s (or their own 20 s).
            let single = await httpError {
                try await client.send(HTTPRequest(url: server.baseURL + "/slow", timeout: .seconds(20)))
            }
            let batch = await client.send(
                all: [
                    HTTPRequest(url: server.baseURL + "/slow"), HTTPRequest(url: server.baseURL + "/fast"),
                    HTTPRequest(url: server.baseURL + "/slow"),
                ], maxInFlight: 3)
            return (single, batch)
        }
        #expect(single?.code == .timeout)
        #expect((try? batch[1].get())?.status == 200, "a request that answers in time keeps its answer")
        for i in [0, 2] {
            guard case .failure(let error) = batch[i] else {
                Issue.record("request \(i) should have timed out")
                continue
            }
            #expect(error.code == .timeout)
        }
        #expect(RequestTimeoutScope.applied(to: HTTPRequest(url: "https://x/")).timeout == nil)
        let own = RequestTimeoutScope.$limit.withValue(.seconds(5)) {
            RequestTimeoutScope.applied(to: HTTPRequest(url: "https://x/", timeout: .seconds(1))).timeout
        }
        #expect(own == .seconds(1))
        await client.shutdown()
        await server.stop()
    }

    @Test("Cancelling the task cancels the transfer")
    func cancellation() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        try await server.route("/slow", [FakeHTTPResponse(status: 200, delay: .seconds(30))])
        let url = server.baseURL + "/slow"
        let task = failingSend(client, url)
        // Cancel once the request is really in flight on the server.
        #expect(try await eventually { try await server.requests().count == 1 })
        task.cancel()
        let error = await task.value
        #expect(error?.code == .cancelled)

        // A task cancelled before it sends fails at once, too.
        let early = Task { () async -> HTTPError? in
            withUnsafeCurrentTask { $0?.cancel() }
            return await httpError { try await client.send(HTTPRequest(url: url)) }
        }
        #expect(await early.value?.code == .cancelled)

        try await server.route("/fast", [.json(200, "{}")])
        #expect(try await client.send(HTTPRequest(url: server.baseURL + "/fast")).status == 200)
        await client.shutdown()
        await server.stop()
    }

    /// Each transfer's upload buffer is libcurl's least (16 kB): bodies many times that size, sent
    /// side by side, still arrive whole and each to its own request.
    @Test("Bodies larger than the upload buffer arrive whole", arguments: [true, false])
    func largeBodiesArriveWhole(http2: Bool) async throws {
        let server = try await FakeHTTPServer.start(http2: http2)
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        try await server.route("/up", [.json(200, "{}")])
        let bodies = (0..<6).map { i in (0..<(40_000 + i * 17_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }
        let results = await client.send(
            all: bodies.enumerated().map { HTTPRequest(url: server.baseURL + "/up/\($0.offset)", body: $0.element) },
            maxInFlight: 6)
        #expect(results.map { (try? $0.get().status) ?? -1 } == Array(repeating: 200, count: 6))
        let recorded = try await server.requests()
        #expect(recorded.count == 6)
        for request in recorded {
            let index = try #require(Int(request.path.split(separator: "/").last ?? ""))
            #expect(request.body == bodies[index], "body \(index)")
        }
        await client.shutdown()
        await server.stop()
    }

    @Test("A response body over the limit fails with .responseTooLarge")
    func boundedBody() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile, maxResponseBytes: 4096))
        try await server.route("/big", [FakeHTTPResponse(status: 200, body: Array(repeating: 0x61, count: 100_000))])
        try await server.route("/small", [FakeHTTPResponse(status: 200, body: Array(repeating: 0x62, count: 4096))])

        let error = await httpError { try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/big")) }
        #expect(error?.code == .responseTooLarge)
        #expect(error?.isTransient == false)

        let perRequest = await httpError {
            try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/small", maxResponseBytes: 100))
        }
        #expect(perRequest?.code == .responseTooLarge)

        let fits = try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/small"))
        #expect(fits.body.count == 4096)
        let raised = try await client.send(
            HTTPRequest(method: "GET", url: server.baseURL + "/big", maxResponseBytes: 200_000))
        #expect(raised.body.count == 100_000)
        await client.shutdown()
        await server.stop()
    }

    @Test("A body without a length is cut off at the limit", arguments: [true, false])
    func boundedStreamedBody(http2: Bool) async throws {
        let server = try await FakeHTTPServer.start(http2: http2)
        let client = try HTTPClient(configuration: .init(caFile: server.caFile, maxResponseBytes: 10_000))
        let streamed = ["transfer-encoding": "chunked"]
        try await server.route("/big", [FakeHTTPResponse(headers: streamed, body: Array(repeating: 1, count: 50_000))])
        try await server.route("/ok", [FakeHTTPResponse(headers: streamed, body: Array(repeating: 2, count: 9_000))])
        let error = await httpError { try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/big")) }
        #expect(error?.code == .responseTooLarge)
        let fits = try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/ok"))
        #expect(fits.body == Array(repeating: 2, count: 9_000))
        #expect(fits.header("content-length") == nil)
        #expect(fits.version == (http2 ? .http2 : .http1_1))
        await client.shutdown()
        await server.stop()
    }

    @Test("An untrusted certificate fails with .tls: verification is on")
    func untrustedCertificate() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient()
        let error = await httpError { try await client.send(HTTPRequest(url: server.baseURL + "/")) }
        #expect(error?.code == .tls)
        #expect(error?.message.isEmpty == false)
        #expect(error?.isTransient == false)
        await client.shutdown()
        await server.stop()
    }

    @Test("A refused connection fails with .connectFailed")
    func connectionRefused() async throws {
        let client = try HTTPClient()
        let error = await httpError { try await client.send(HTTPRequest(url: "https://127.0.0.1:1/")) }
        #expect(error?.code == .connectFailed)
        #expect(error?.isTransient == true)
        await client.shutdown()
    }

    @Test("Shutdown fails in-flight requests with .shutdown and later sends too")
    func shutdownInFlight() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile, eventLoops: 2))
        try await server.route("/slow", [FakeHTTPResponse(status: 200, delay: .seconds(30))])
        let url = server.baseURL + "/slow"
        let tasks = (0..<6).map { _ in
            failingSend(client, url)
        }
        #expect(try await eventually { try await server.requests().count == 6 })
        // No duration: each in-flight send fails with .shutdown, so none waited for its 30 s answer.
        await client.shutdown()
        for task in tasks { #expect(await task.value?.code == .shutdown) }
        let after = await httpError { try await client.send(HTTPRequest(url: url)) }
        #expect(after?.code == .shutdown)
        await client.shutdown()  // idempotent
        await server.stop()
    }

    @Test("Tasks can run on the client's event loops and still share one connection")
    func tasksOnEventLoop() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        try await server.route("/slow", [FakeHTTPResponse(status: 200, body: Array("ok".utf8), delay: .seconds(1))])
        let url = server.baseURL + "/slow"
        let executor = client.taskExecutor()
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask(executorPreference: executor) {
                    // Two requests in a row: the second is sent from the loop thread itself.
                    _ = try await client.send(HTTPRequest(url: url + "/a\(index)"))
                    return try await client.send(HTTPRequest(url: url + "/b\(index)")).bodyText
                }
            }
            var bodies: [String] = []
            for try await body in group { bodies.append(body) }
            return bodies
        }
        #expect(bodies == Array(repeating: "ok", count: 20))
        #expect(try await server.connectionCount() == 1)
        #expect(client.connectionsOpened == 1)

        // A task on a loop that is shut down keeps running elsewhere and sees .shutdown.
        try await server.route("/hang", [FakeHTTPResponse(status: 200, delay: .seconds(30))])
        let hanging = Task(executorPreference: executor) { () async -> HTTPError? in
            await httpError { try await client.send(HTTPRequest(url: server.baseURL + "/hang")) }
        }
        #expect(try await eventually { try await server.requests().contains { $0.path == "/hang" } })
        await client.shutdown()
        #expect(await hanging.value?.code == .shutdown)
        let after = Task(executorPreference: executor) { () async -> HTTPError? in
            await httpError { try await client.send(HTTPRequest(url: url)) }
        }
        #expect(await after.value?.code == .shutdown)
        await server.stop()
    }

    @Test("Malformed requests are rejected before they reach the wire")
    func invalidRequests() async throws {
        let client = try HTTPClient()
        let injected = await httpError {
            try await client.send(HTTPRequest(url: "https://127.0.0.1:1/", headers: [HTTPHeader("x", "a\r\nb: c")]))
        }
        #expect(injected?.code == .invalidRequest)
        let method = await httpError { try await client.send(HTTPRequest(method: "GE T", url: "https://127.0.0.1:1/")) }
        #expect(method?.code == .invalidRequest)
        let scheme = await httpError { try await client.send(HTTPRequest(url: "file:///etc/passwd")) }
        #expect(scheme?.code == .invalidRequest)
        let url = await httpError { try await client.send(HTTPRequest(url: "")) }
        #expect(url?.code == .invalidRequest)
        #expect(throws: HTTPError.self) { try HTTPClient(configuration: .init(eventLoops: 0)) }
        await client.shutdown()
    }

    @Test("Requests spread over several event loops")
    func multipleLoops() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(configuration: .init(caFile: server.caFile, eventLoops: 3))
        try await server.route("/", [.json(200, "{}")])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<30 {
                group.addTask {
                    let response = try await client.send(HTTPRequest(url: server.baseURL + "/m/\(index)"))
                    #expect(response.status == 200)
                }
            }
            try await group.waitForAll()
        }
        // Each loop has its own connection cache: at most one connection per loop.
        #expect(client.connectionsOpened <= 3)
        #expect(try await server.connectionCount() == client.connectionsOpened)
        await client.shutdown()
        await server.stop()
    }
}
