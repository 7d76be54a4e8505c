import Foundation
import HeraldProcess
import HeraldSync

/// Why a ``FakeHTTPServer`` could not start or answer a control command.
public struct FakeHTTPServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

    /// Creates an error.
    /// - Parameter message: What went wrong.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { "FakeHTTPServer: \(message)" }
}

/// A loopback HTTPS server for tests: HTTP/2 over TLS (ALPN `h2`) and HTTP/1.1 on `127.0.0.1`, with a
/// freshly generated CA and server certificate (SAN `IP:127.0.0.1`, `DNS:localhost`).
///
/// The server is a small Python script, `fake_http_server.py`, shipped as a resource of this module
/// (``scriptURL()``; needs `python3` on `PATH` with the `h2` and `cryptography` packages). It runs as a
/// child process driven with JSON lines over its stdin/stdout. Requests are answered concurrently, so many
/// delayed streams can be in flight on one HTTP/2 connection.
///
/// ```swift
/// try await withFakeHTTPServer { server in
///     try await server.route("/3/device/", [.json(200, "{}", headers: ["apns-id": "1"])])
///     let client = try HTTPClient(configuration: .init(caFile: server.caFile))
///     _ = try await client.send(HTTPRequest(url: server.baseURL + "/3/device/abc"))
///     let recorded = try await server.requests()
/// }
/// ```
///
/// Stop every server and wait for it: ``withFakeHTTPServer(http2:_:)`` does, and so does the
/// ``Testing/Trait/stopsFakeHTTPServers`` trait for every server a test starts. A server that is only
/// released is killed without waiting for it.
///
/// Starting a server sets `SIGPIPE` to be ignored in this process, so that writing to a dead child fails
/// with an error instead of killing the test runner.
public final class FakeHTTPServer: Sendable {
    /// The TCP port the server listens on.
    public let port: Int
    /// The path of the PEM file holding the CA certificate to trust (``HTTPClientConfiguration/caFile``).
    public let caFile: String
    /// `https://127.0.0.1:PORT`.
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    private let channel: ControlChannel
    private let directory: URL

    private init(port: Int, caFile: String, channel: ControlChannel, directory: URL) {
        self.port = port
        self.caFile = caFile
        self.channel = channel
        self.directory = directory
    }

    deinit {
        channel.terminate(wait: false)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts a server on an ephemeral port.
    /// - Parameter http2: Whether to offer HTTP/2 in ALPN. `false` makes an HTTP/1.1-only server, for
    ///   testing a client's fallback.
    /// - Returns: The running server.
    /// - Throws: ``FakeHTTPServerError`` when `python3` is missing or the script fails to start.
    public static func start(http2: Bool = true) async throws -> FakeHTTPServer {
        signal(SIGPIPE, SIG_IGN)
        guard let python = Subprocess.find("python3") else { throw FakeHTTPServerError("python3 not found on PATH") }
        let script = try scriptURL()

        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-fake-http-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        let child: ChildProcess
        do {
            child = try ChildProcess.spawn([python, "-u", script.path, directory.path, http2 ? "http2" : "http1"])
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw FakeHTTPServerError("could not run \(python): \(error)")
        }
        let channel = ControlChannel(process: child)
        // Weak: the server's lifetime, not the reader thread's, decides when the channel goes.
        PipeDrain.start(child, child.output, name: "herald.fake-http.control") { [weak channel] data in
            channel?.receive(data)
        }
        // The server's own messages (tracebacks) go to the test's stderr, as when it inherited it.
        PipeDrain.start(child, child.errors, name: "herald.fake-http.stderr") { data in
            if !data.isEmpty { FileHandle.standardError.write(data) }
        }
        do {
            let ready = try await channel.reply(to: nil)
            guard let port = ready.port, let ca = ready.ca else {
                throw FakeHTTPServerError("unexpected start-up line")
            }
            let server = FakeHTTPServer(port: port, caFile: ca, channel: channel, directory: directory)
            FakeHTTPServerScope.current?.adopt(server)
            return server
        } catch {
            channel.terminate(wait: true)
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// The Python server script, shipped as a resource of this module: it can be linted and run alone
    /// (`python3 fake_http_server.py DIRECTORY [http2|http1]`; its header describes the control lines).
    /// - Returns: The file URL of `fake_http_server.py`.
    /// - Throws: ``FakeHTTPServerError`` when the resource is missing from the bundle.
    public static func scriptURL() throws -> URL {
        guard let url = Bundle.module.url(forResource: "fake_http_server", withExtension: "py") else {
            throw FakeHTTPServerError("fake_http_server.py is missing from the HeraldHTTPTesting resources")
        }
        return url
    }

    /// Sets the responses for requests whose path starts with `pathPrefix`; the longest matching prefix wins
    /// (a route with a `method` beats one without at the same length). Responses are served in order and the
    /// last one repeats. Paths without a route get `404`. Setting a route again replaces it and restarts
    /// its sequence.
    /// - Parameters:
    ///   - pathPrefix: The path prefix, for example `/3/device/`.
    ///   - method: Only match this method; `nil` matches any.
    ///   - responses: The responses, in order.
    public func route(_ pathPrefix: String, method: String? = nil, _ responses: [FakeHTTPResponse]) async throws {
        let wire = responses.map { response in
            WireResponse(
                status: response.status, headers: response.headers,
                body: Data(response.body).base64EncodedString(),
                delay: response.delay.map { duration in
                    let (seconds, attoseconds) = duration.components
                    return Double(seconds) + Double(attoseconds) / 1e18
                })
        }
        _ = try await command(WireRoute(prefix: pathPrefix, method: method, responses: wire))
    }

    /// Every request received since the start or the last ``reset()``, in arrival order.
    /// - Returns: The recorded requests.
    public func requests() async throws -> [RecordedRequest] {
        let reply = try await command(WireCommand(cmd: "requests"))
        return (reply.requests ?? []).map { request in
            RecordedRequest(
                method: request.method, path: request.path, headers: request.headers,
                body: Array(Data(base64Encoded: request.body) ?? Data()), connectionID: request.connection_id,
                httpVersion: request.http_version)
        }
    }

    /// Forgets recorded requests and routes. The connection count is kept.
    public func reset() async throws {
        _ = try await command(WireCommand(cmd: "reset"))
    }

    /// The number of TCP connections accepted so far.
    /// - Returns: The count.
    public func connectionCount() async throws -> Int {
        try await command(WireCommand(cmd: "connections")).count ?? 0
    }

    /// Stops the server process and removes its temporary files. Calling it again does nothing.
    ///
    /// Waits for the process without holding a thread (it polls with `Task.sleep`): a blocking wait
    /// on a 2-core machine's concurrency pool starves every other test.
    public func stop() async {
        if let process = channel.terminate(wait: false) { await Self.reap(process) }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Polls until `process` has ended: SIGTERM was sent; after 5 s, SIGKILL; after 10 s it gives up.
    private static func reap(_ process: ChildProcess) async {
        let started = ContinuousClock.now
        var killed = false
        while process.isRunning {
            let waited = ContinuousClock.now - started
            if waited > .seconds(10) { return }
            if waited > .seconds(5), !killed {
                process.send(SIGKILL)
                killed = true
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    private func command(_ value: some Encodable) async throws -> WireReply {
        let line = try JSONEncoder().encode(value)
        let reply = try await channel.reply(to: line)
        if !reply.ok { throw FakeHTTPServerError(reply.error ?? "command failed") }
        return reply
    }
}

// MARK: - Wire format

private struct WireCommand: Encodable {
    var cmd: String
}

private struct WireRoute: Encodable {
    var cmd = "route"
    var prefix: String
    var method: String?
    var responses: [WireResponse]
}

private struct WireResponse: Encodable {
    var status: Int
    var headers: [String: String]
    var body: String
    var delay: Double?
}

private struct WireRequest: Decodable {
    var method: String
    var path: String
    var headers: [String: String]
    var body: String
    // swift-format-ignore: AlwaysUseLowerCamelCase
    var connection_id: Int
    // swift-format-ignore: AlwaysUseLowerCamelCase
    var http_version: String
}

private struct WireReply: Decodable {
    var ok: Bool
    var error: String?
    var port: Int?
    var ca: String?
    var count: Int?
    var requests: [WireRequest]?
}

/// The child process and its JSON-lines pipe. Replies arrive in command order, so waiters form a FIFO;
/// writing a command and enqueueing its waiter happen under one lock.
private final class ControlChannel: Sendable {
    private struct State {
        var process: ChildProcess?
        var buffer = Data()
        var waiters: [CheckedContinuation<Data, any Error>] = []
        var finished = false
    }

    private let state: Locked<State>

    init(process: ChildProcess) {
        state = Locked(State(process: process))
    }

    /// Sends `line` (or nothing, to wait for the start-up line) and waits for the next reply line.
    func reply(to line: Data?) async throws -> WireReply {
        let data = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
            let failure: (any Error)? = state.withLock { state in
                if state.finished { return FakeHTTPServerError("the server process is not running") }
                if let line {
                    guard state.process?.write(Array(line) + [0x0A]) == true else {
                        return FakeHTTPServerError("could not write to the server process")
                    }
                }
                state.waiters.append(continuation)
                return nil
            }
            if let failure { continuation.resume(throwing: failure) }
        }
        do {
            return try JSONDecoder().decode(WireReply.self, from: data)
        } catch {
            throw FakeHTTPServerError("unreadable reply \(String(decoding: data, as: UTF8.self)): \(error)")
        }
    }

    /// Feeds stdout bytes; an empty chunk means end of file.
    func receive(_ chunk: Data) {
        var ready: [(CheckedContinuation<Data, any Error>, Data)] = []
        var orphans: [CheckedContinuation<Data, any Error>] = []
        state.withLock { state in
            if chunk.isEmpty {
                state.finished = true
                orphans = state.waiters
                state.waiters.removeAll()
                return
            }
            // Only the new bytes can hold a newline not seen yet: a large reply (the requests of a
            // 20,000-delivery run) arrives in many chunks, and rescanning it all made this quadratic.
            var searchFrom = state.buffer.count
            state.buffer.append(chunk)
            while let newline = Self.newline(in: state.buffer, from: searchFrom) {
                let line = Data(state.buffer[state.buffer.startIndex..<newline])
                state.buffer = Data(state.buffer[state.buffer.index(after: newline)...])
                searchFrom = 0
                if !state.waiters.isEmpty { ready.append((state.waiters.removeFirst(), line)) }
            }
        }
        for (waiter, line) in ready { waiter.resume(returning: line) }
        for waiter in orphans { waiter.resume(throwing: FakeHTTPServerError("the server process exited")) }
    }

    /// The index of the first newline at or after `offset` bytes into `data` (`memchr`).
    static func newline(in data: Data, from offset: Int) -> Data.Index? {
        guard offset < data.count else { return nil }
        return data.withUnsafeBytes { raw -> Data.Index? in
            guard let base = raw.baseAddress else { return nil }
            guard let hit = memchr(base + offset, 0x0A, raw.count - offset) else { return nil }
            return data.startIndex + (UnsafeRawPointer(hit) - base)
        }
    }

    /// Kills the child (SIGTERM) and fails pending commands.
    /// Closes the control pipe and sends SIGTERM; with `wait`, blocks until the process has ended.
    /// Returns the process that was running, if any.
    @discardableResult
    func terminate(wait: Bool) -> ChildProcess? {
        let (process, orphans) = state.withLock { state in
            defer {
                state.process = nil
                state.finished = true
                state.waiters.removeAll()
            }
            return (state.process, state.waiters)
        }
        for waiter in orphans { waiter.resume(throwing: FakeHTTPServerError("the server was stopped")) }
        guard let process else { return nil }
        process.closeInput()
        process.terminate(forcibly: false)
        if wait { _ = process.waitForExit() }
        return process
    }
}
