import HeraldSync

/// The servers started inside one scope (a ``withFakeHTTPServer(http2:_:)`` call or a test with the
/// ``Testing/Trait/stopsFakeHTTPServers`` trait), stopped and waited for when the scope ends.
final class FakeHTTPServerScope: Sendable {
    /// The scope of the running task, if any; ``FakeHTTPServer/start(http2:)`` adds its server to it.
    @TaskLocal static var current: FakeHTTPServerScope?

    private let servers = Locked<[FakeHTTPServer]>([])

    /// Adds a server to stop at the end of the scope.
    func adopt(_ server: FakeHTTPServer) {
        servers.withLock { $0.append(server) }
    }

    /// Runs `body` as the current scope, then stops every server started in it, on every exit path.
    func run<T>(_ body: () async throws -> T) async throws -> T {
        let result: Result<T, any Error>
        do {
            result = .success(try await Self.$current.withValue(self) { try await body() })
        } catch {
            result = .failure(error)
        }
        await stopAll()
        return try result.get()
    }

    /// Stops the adopted servers, awaiting each.
    func stopAll() async {
        let started = servers.withLock { servers in
            let all = servers
            servers.removeAll()
            return all
        }
        for server in started { await server.stop() }
    }
}

/// Starts a ``FakeHTTPServer``, runs `body` with it and stops it, awaiting the stop, however `body` ends.
/// Servers that `body` starts itself are stopped too.
/// - Parameters:
///   - http2: Whether to offer HTTP/2 in ALPN (see ``FakeHTTPServer/start(http2:)``).
///   - body: The code using the server.
/// - Returns: What `body` returns.
/// - Throws: What starting the server or `body` throws.
public func withFakeHTTPServer<T>(http2: Bool = true, _ body: (FakeHTTPServer) async throws -> T) async throws -> T {
    try await FakeHTTPServerScope().run {
        try await body(try await FakeHTTPServer.start(http2: http2))
    }
}
