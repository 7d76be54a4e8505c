import ChannelAPI
import HeraldSync

/// An in-process ``HTTPTransport`` that answers every request from a script and records it: the
/// transport for channel unit tests and ``ChannelConformance`` (no sockets, no TLS, no Python).
///
/// ```swift
/// let http = ScriptedTransport { request in
///     request.url.hasPrefix("https://oauth2.example/") ? .success(.init(status: 200, body: token)) : nil
/// } answer: { _ in .success(HTTPResponse(status: 503, headers: [HTTPHeader("retry-after", "5")])) }
/// ```
public final class ScriptedTransport: HTTPTransport {
    /// How to answer one request.
    public typealias Answer = @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>

    private let fixed: @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>?
    private let answer: Answer
    private let recorded = Locked<[HTTPRequest]>([])

    /// A transport that answers with `fixed` where it gives an answer (credential endpoints a test
    /// does not script), else with `answer`.
    public init(
        fixed: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>? = { _ in nil },
        answer: @escaping Answer
    ) {
        self.fixed = fixed
        self.answer = answer
    }

    /// Every request answered by the script (not by `fixed`), in order.
    public var requests: [HTTPRequest] { recorded.withLock { $0 } }

    /// Forgets the recorded requests.
    public func reset() { recorded.withLock { $0 = [] } }

    /// Answers from the script; the request's timeout scope is applied as a real transport would.
    public func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        try respond(RequestTimeoutScope.applied(to: request)).get()
    }

    /// Answers every request from the script, in order.
    public func send(all requests: [HTTPRequest], maxInFlight: Int) async -> [Result<HTTPResponse, HTTPError>] {
        requests.map { respond(RequestTimeoutScope.applied(to: $0)) }
    }

    private func respond(_ request: HTTPRequest) -> Result<HTTPResponse, HTTPError> {
        if let answer = fixed(request) { return answer }
        recorded.withLock { $0.append(request) }
        return answer(request)
    }
}
