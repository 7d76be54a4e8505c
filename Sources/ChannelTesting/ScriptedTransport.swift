import ChannelAPI
import HeraldSync

/// An in-process ``HTTPTransport`` that answers every request from a script and records it: the
/// transport for channel unit tests and ``ChannelConformance`` (no sockets, no TLS, no Python).
///
/// Answer from a closure:
///
/// ```swift
/// let http = ScriptedTransport { request in
///     request.url.hasPrefix("https://oauth2.example/") ? .success(.init(status: 200, body: token)) : nil
/// } answer: { _ in .success(HTTPResponse(status: 503, headers: [HTTPHeader("retry-after", "5")])) }
/// ```
///
/// or script routes the way a fake provider would answer them, then check what the channel sent:
///
/// ```swift
/// let http = ScriptedTransport()                       // unrouted requests get 404
/// http.route("/3/device/", [.json(410, #"{"reason":"Unregistered"}"#), .json(200, "")])
/// http.route("https://sandbox.example/", [.error(.connectFailed)])
/// // … deliver …
/// let sent = http.requests                             // [HTTPRequest], in order
/// #expect(sent.first?.path == "/3/device/abcd" && sent.first?.header("apns-id") == deliveryId)
/// ```
public final class ScriptedTransport: HTTPTransport {
    /// How to answer one request.
    public typealias Answer = @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>

    private struct Route {
        var prefix: String
        var method: String?
        var responses: [ScriptedResponse]
        var served = 0
    }

    private let fixed: @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>?
    private let answer: Answer
    private let recorded = Locked<[HTTPRequest]>([])
    private let routes = Locked<[Route]>([])

    /// A transport that answers with `fixed` where it gives an answer (credential endpoints a test
    /// does not script), else from the routes set with ``route(_:method:_:)``, else with `answer`.
    /// - Parameters:
    ///   - fixed: Answers for requests outside the script; these are not recorded.
    ///   - answer: The answer to every recorded request no route matches.
    public init(
        fixed: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>? = { _ in nil },
        answer: @escaping Answer
    ) {
        self.fixed = fixed
        self.answer = answer
    }

    /// A transport answering from the routes set with ``route(_:method:_:)``; a request no route
    /// matches gets `404` with an empty body, as a server without that path would answer.
    public convenience init() {
        self.init { _ in .success(HTTPResponse(status: 404)) }
    }

    /// Every request answered by the script (routes or `answer`, not `fixed`), in the order sent.
    /// For a ``send(all:maxInFlight:)`` call that is the order of the array.
    public var requests: [HTTPRequest] { recorded.withLock { $0 } }

    /// Forgets the recorded requests; the routes stay (set one again to restart its sequence).
    public func reset() { recorded.withLock { $0 = [] } }

    /// Answers requests whose URL starts with `prefix` from `responses`, like a fake server's route:
    /// the responses are served in order and the last one repeats; the longest matching prefix wins,
    /// and a route with a `method` beats one without at the same length. Setting a route for the same
    /// prefix and method again replaces it and restarts its sequence.
    /// - Parameters:
    ///   - prefix: A path prefix (starting with `/`, matched against ``HTTPRequest/path`` of any host,
    ///     for example `/3/device/`), or a URL prefix (`https://sandbox.example/3/device/`) to tell
    ///     hosts apart.
    ///   - method: Only match this method; `nil` matches any.
    ///   - responses: The answers, in order; an empty list answers `404`.
    public func route(_ prefix: String, method: String? = nil, _ responses: [ScriptedResponse]) {
        routes.withLock { routes in
            routes.removeAll { $0.prefix == prefix && $0.method == method }
            routes.append(Route(prefix: prefix, method: method, responses: responses))
        }
    }

    /// Answers from the script after the scripted delay; the request's timeout scope is applied as a
    /// real transport would (a delay longer than the request's timeout is an ``HTTPError/Code/timeout``).
    public func send(_ request: HTTPRequest) async throws(HTTPError) -> HTTPResponse {
        let request = RequestTimeoutScope.applied(to: request)
        return try await Self.deliver(respond(request), timeout: request.timeout).get()
    }

    /// Answers every request from the script: the answers are chosen in the order of `requests`,
    /// and scripted delays run concurrently, at most `maxInFlight` at once.
    public func send(all requests: [HTTPRequest], maxInFlight: Int) async -> [Result<HTTPResponse, HTTPError>] {
        let scripted = requests.map { request in
            let request = RequestTimeoutScope.applied(to: request)
            return (respond(request), request.timeout)
        }
        guard scripted.contains(where: { $0.0.delay != nil }) else { return scripted.map(\.0.result) }
        var results = [Result<HTTPResponse, HTTPError>?](repeating: nil, count: scripted.count)
        await withTaskGroup(of: (Int, Result<HTTPResponse, HTTPError>).self) { group in
            var next = 0
            func start() {
                let index = next
                let (response, timeout) = scripted[index]
                group.addTask { (index, await Self.deliver(response, timeout: timeout)) }
                next += 1
            }
            while next < scripted.count && next < max(1, maxInFlight) { start() }
            for await (index, result) in group {
                results[index] = result
                if next < scripted.count { start() }
            }
        }
        return results.map { $0 ?? .failure(HTTPError(.cancelled, "not answered")) }
    }

    /// Chooses the answer to `request` (and records it unless `fixed` answers).
    private func respond(_ request: HTTPRequest) -> ScriptedResponse {
        if let answer = fixed(request) { return ScriptedResponse(answer) }
        recorded.withLock { $0.append(request) }
        let routed: ScriptedResponse?? = routes.withLock { routes in
            let path = request.path
            var best: Int?
            for (i, route) in routes.enumerated() {
                if let method = route.method, method != request.method { continue }
                let matches =
                    route.prefix.hasPrefix("/") ? path.hasPrefix(route.prefix) : request.url.hasPrefix(route.prefix)
                guard matches else { continue }
                if let b = best {
                    let current = routes[b]
                    let longer = route.prefix.count > current.prefix.count
                    let sameButMethod =
                        route.prefix.count == current.prefix.count && current.method == nil && route.method != nil
                    if !longer && !sameButMethod { continue }
                }
                best = i
            }
            guard let i = best else { return .none }
            let route = routes[i]
            guard !route.responses.isEmpty else { return .some(nil) }
            routes[i].served += 1
            return route.responses[min(route.served, route.responses.count - 1)]
        }
        switch routed {
        case .none: return ScriptedResponse(answer(request))
        case .some(.none): return ScriptedResponse(.success(HTTPResponse(status: 404)))
        case .some(.some(let response)): return response
        }
    }

    /// Waits for `response`'s delay (cut at `timeout`, as a transport's total timeout would) and
    /// returns its result; a cancelled wait is ``HTTPError/Code/cancelled``.
    private static func deliver(_ response: ScriptedResponse, timeout: Duration?) async -> Result<
        HTTPResponse, HTTPError
    > {
        guard let delay = response.delay, delay > .zero else { return response.result }
        let timedOut = timeout.map { $0 < delay } ?? false
        do {
            try await Task.sleep(for: timedOut ? (timeout ?? delay) : delay)
        } catch {
            return .failure(HTTPError(.cancelled, "the request was cancelled"))
        }
        if timedOut { return .failure(HTTPError(.timeout, "scripted answer took longer than the request's timeout")) }
        return response.result
    }
}

/// One scripted answer for ``ScriptedTransport/route(_:method:_:)``: a response or a transport error,
/// optionally after a delay.
public struct ScriptedResponse: Sendable {
    /// The response, or the transport error that stands for "no answer".
    public var result: Result<HTTPResponse, HTTPError>
    /// How long the answer takes; `nil` answers at once. Other requests are not held up.
    public var delay: Duration?

    /// An answer with `status`, `headers` (in name order) and `body`.
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Response headers.
    ///   - body: The response body.
    ///   - delay: How long the answer takes.
    public init(status: Int = 200, headers: [String: String] = [:], body: [UInt8] = [], delay: Duration? = nil) {
        let fields = headers.sorted { $0.key < $1.key }.map { HTTPHeader($0.key, $0.value) }
        self.init(.success(HTTPResponse(status: status, headers: fields, body: body)), delay: delay)
    }

    /// An answer with the given result.
    /// - Parameters:
    ///   - result: The response or transport error.
    ///   - delay: How long the answer takes.
    public init(_ result: Result<HTTPResponse, HTTPError>, delay: Duration? = nil) {
        self.result = result
        self.delay = delay
    }

    /// A JSON response with `content-type: application/json`.
    /// - Parameters:
    ///   - status: The status code.
    ///   - text: The JSON text of the body.
    ///   - headers: Further headers; a `content-type` here wins.
    /// - Returns: The answer.
    public static func json(_ status: Int, _ text: String, headers: [String: String] = [:]) -> ScriptedResponse {
        var all = ["content-type": "application/json"]
        all.merge(headers) { _, given in given }
        return ScriptedResponse(status: status, headers: all, body: Array(text.utf8))
    }

    /// A transport error: no response arrived (`connect-failed` for a host nothing listens on,
    /// `timeout`, `tls`, `blocked-address`, …).
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: The error's message.
    /// - Returns: The answer.
    public static func error(_ code: HTTPError.Code, _ message: String = "scripted") -> ScriptedResponse {
        ScriptedResponse(.failure(HTTPError(code, message)))
    }

    /// The status of the response, or nil for a transport error.
    public var status: Int? { try? result.get().status }
}

extension HTTPRequest {
    /// The request target as a server sees it: the URL's path and query (`/3/device/abc?x=1`), `/`
    /// for a URL without a path. For asserting on what a channel sent through a ``ScriptedTransport``.
    public var path: String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let target = String(rest[slash...])
        return target.hasPrefix("?") ? "/" + target : target
    }

    /// The value of the first header named `name`, compared case-insensitively, or nil.
    /// - Parameter name: The header name.
    /// - Returns: The value.
    public func header(_ name: String) -> String? {
        headers.first { HTTPHeader.namesEqual($0.name, name) }?.value
    }

    /// The body decoded as UTF-8 (invalid sequences are replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
