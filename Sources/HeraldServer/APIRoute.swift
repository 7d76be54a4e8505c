import HeraldMHD
import Router

/// A resource of the HTTP API (devices, notifications, the event stream, …): the routes it
/// declares. The one routing layer (``HeraldAPI/handle(_:)``) matches a request to a route,
/// answers 404 and 405, refuses requests while the server stops, enforces the route's body limit,
/// authenticates the caller (token, scope, rate limit) and counts the request; the resource's
/// handler sees only requests that passed. A new resource is a new type listed in
/// ``HeraldAPI/resources`` (docs/architecture.md, "Adding an HTTP resource").
public protocol APIResource: Sendable {
    /// The routes, in the order the `Allow` header lists their methods.
    var routes: [APIRoute] { get }
}

/// One method on one path pattern, with what a caller needs to reach its handler.
public struct APIRoute: Sendable {
    /// The HTTP method (`GET` routes answer `HEAD` too).
    public var method: String
    /// The path pattern.
    public var pattern: RoutePattern
    /// Who may call it.
    public var access: RouteAccess
    /// What its body is, for the code of a 422 (`invalid_<subject>`).
    public var subject: String
    /// Whether a success means the store took a write (the store's health is noted).
    public var writesStore: Bool
    /// Whether it is answered while the server stops (only `GET /healthz`).
    public var servedWhileStopping: Bool
    /// A body limit below the server's `max-body` (413 `payload_too_large`); nil: `max-body`.
    public var maxBody: Int?
    /// Answers a request that passed the checks above.
    public var handler: @Sendable (HeraldAPI, APICall) async throws -> ServerResponse
    /// Renders the route's errors (those of the shared checks too) in a protocol's own shape; nil:
    /// the API's JSON error (http-api.md §6). Status and headers are the error's to keep.
    public var errorResponse: (@Sendable (APIError) -> ServerResponse)?

    /// Creates a route.
    public init(
        _ method: String, _ pattern: RoutePattern, access: RouteAccess, subject: String = "request",
        writesStore: Bool = false, servedWhileStopping: Bool = false, maxBody: Int? = nil,
        errorResponse: (@Sendable (APIError) -> ServerResponse)? = nil,
        handler: @escaping @Sendable (HeraldAPI, APICall) async throws -> ServerResponse
    ) {
        (self.method, self.pattern, self.access, self.handler) = (method, pattern, access, handler)
        (self.subject, self.writesStore, self.servedWhileStopping, self.maxBody) = (
            subject, writesStore, servedWhileStopping, maxBody
        )
        self.errorResponse = errorResponse
    }
}

/// A request matched to a route: what a handler reads.
public struct APICall: Sendable {
    /// The request as received (its method may be `HEAD` on a `GET` route).
    public var request: ServerRequest
    /// The values of the pattern's `{…}` segments, by name.
    public var parameters: [String: String]
    /// The authenticated caller; nil on a route with ``RouteAccess/open``.
    public var caller: APIToken?

    /// Creates a call.
    public init(request: ServerRequest, parameters: [String: String] = [:], caller: APIToken? = nil) {
        self.request = request
        self.parameters = parameters
        self.caller = caller
    }

    /// The authenticated token (401 on an open route, where there is none).
    public var token: APIToken {
        get throws(APIError) {
            guard let caller else { throw APIError.unauthorized("send Authorization: Bearer <token>") }
            return caller
        }
    }

    /// The value of the `{name}` segment (empty when the pattern has none).
    public subscript(_ name: String) -> String { parameters[name] ?? "" }
}

/// A path pattern: a template such as `/v1/notifications/{id}` (a `{…}` segment matches one
/// non-empty segment), or a test of the path the server makes at request time.
public struct RoutePattern: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case variable(String)
    }

    enum Kind: Sendable {
        case template([Segment])
        /// The metrics label for a path it serves, nil for the others.
        case test(@Sendable (_ path: String, _ api: HeraldAPI) -> String?)
    }

    let kind: Kind
    /// The label of `GET /metrics` and of error messages (the template itself).
    public let label: String

    /// A template: literal segments and `{name}` segments.
    public init(_ template: String) {
        label = template
        kind = .template(
            RoutePattern.segments(of: template).map { s in
                s.hasPrefix("{") && s.hasSuffix("}") && s.count > 2
                    ? .variable(String(s.dropFirst().dropLast())) : .literal(s)
            })
    }

    /// A pattern tested against every path no template matched; `test` returns the metrics label of
    /// a path it serves (a bounded set: never the path of an unknown client) or nil.
    public static func test(
        label: String, _ test: @escaping @Sendable (_ path: String, _ api: HeraldAPI) -> String?
    ) -> RoutePattern {
        RoutePattern(kind: .test(test), label: label)
    }

    init(kind: Kind, label: String) {
        self.kind = kind
        self.label = label
    }

    /// The segments after the first `/` (`/v1/devices` → `v1`, `devices`; a trailing `/` leaves an
    /// empty last segment, which no template matches).
    static func segments(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
    }

    /// The `{…}` values when the template matches `parts`, nil otherwise.
    func match(_ parts: [String]) -> [String: String]? {
        guard case .template(let segments) = kind, segments.count == parts.count else { return nil }
        var values: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let l): guard l == part else { return nil }
            case .variable(let name):
                guard !part.isEmpty else { return nil }
                values[name] = part
            }
        }
        return values
    }

    /// Literal segments: the more, the more specific (`/v1/channels/{name}/public-key` wins over
    /// `/v1/channels/{name}/{kind}`).
    var literals: Int {
        guard case .template(let segments) = kind else { return 0 }
        return segments.filter { if case .literal = $0 { true } else { false } }.count
    }
}

/// Who may call a route.
public struct RouteAccess: Sendable {
    /// Where a bearer token may come from besides `Authorization: Bearer`.
    public enum QueryToken: Sendable {
        /// Only the header; a `?token=` is refused with a hint.
        case refused
        /// `?token=` too (`GET /v1/events`: a browser's `EventSource` sends no header).
        case accepted
        /// `?token=` is the route's own parameter (a push token), not a credential.
        case parameter
    }

    enum Rule: Sendable {
        case open
        case scopes(Set<String>, query: QueryToken, openWhen: (@Sendable (ServerConfig) -> Bool)?)
        case custom(@Sendable (ServerRequest, HeraldAPI) throws -> APIToken?)
    }

    let rule: Rule

    /// No token (the route checks what it needs itself, as a webhook its secret).
    public static let open = RouteAccess(rule: .open)

    /// A bearer token with one of `scopes`, rate-limited per token; `openWhen` makes the route open
    /// while the current `server:` settings say so (`metrics: public`).
    public static func token(
        _ scopes: Set<String>, query: QueryToken = .refused,
        openWhen: (@Sendable (ServerConfig) -> Bool)? = nil
    ) -> RouteAccess {
        RouteAccess(rule: .scopes(scopes, query: query, openWhen: openWhen))
    }

    /// A route's own check (an allow-list of addresses, a signature): returns the caller's token,
    /// whose name is rate-limited like a bearer token's, or nil for an anonymous caller; throws an
    /// ``APIError`` to refuse.
    public static func custom(_ check: @escaping @Sendable (ServerRequest, HeraldAPI) throws -> APIToken?)
        -> RouteAccess
    {
        RouteAccess(rule: .custom(check))
    }
}

/// Every route of the API, matched by path and method.
struct RouteTable: Sendable {
    /// The outcome of matching.
    enum Match {
        case found(APIRoute, parameters: [String: String], label: String)
        case methodNotAllowed(label: String, allow: [String])
        case notFound
    }

    let templates: [APIRoute]
    let tests: [APIRoute]
    /// ``templates`` by their number of segments, each list in the order of ``templates``: a path is
    /// tried only against the templates of its own length.
    let templatesBySegments: [Int: [APIRoute]]

    init(_ resources: [any APIResource], extra: [APIRoute] = []) {
        let routes = resources.flatMap(\.routes) + extra
        var templates: [APIRoute] = []
        var tests: [APIRoute] = []
        for route in routes {
            if case .template = route.pattern.kind { templates.append(route) } else { tests.append(route) }
        }
        // Stable: equally specific routes keep their declared order.
        self.templates = templates.enumerated().sorted { a, b in
            a.element.pattern.literals != b.element.pattern.literals
                ? a.element.pattern.literals > b.element.pattern.literals : a.offset < b.offset
        }.map(\.element)
        self.tests = tests
        var bySegments: [Int: [APIRoute]] = [:]
        for route in self.templates {
            if case .template(let segments) = route.pattern.kind {
                bySegments[segments.count, default: []].append(route)
            }
        }
        templatesBySegments = bySegments
    }

    /// The route for `method` on `path`: templates first, then the tested patterns; among the
    /// patterns a path matches, the most specific that takes the method (`HEAD` is taken by `GET`).
    func match(method: String, path: String, api: HeraldAPI) -> Match {
        let parts = RoutePattern.segments(of: path)
        var candidates: [(route: APIRoute, parameters: [String: String], label: String)] = []
        for route in templatesBySegments[parts.count] ?? [] {
            if let values = route.pattern.match(parts) { candidates.append((route, values, route.pattern.label)) }
        }
        if candidates.isEmpty {
            for route in tests {
                if case .test(let test) = route.pattern.kind, let label = test(path, api) {
                    candidates.append((route, [:], label))
                }
            }
        }
        guard let first = candidates.first else { return .notFound }
        for c in candidates where c.route.method == method || (method == "HEAD" && c.route.method == "GET") {
            return .found(c.route, parameters: c.parameters, label: c.label)
        }
        var allow: [String] = []
        for c in candidates where !allow.contains(c.route.method) { allow.append(c.route.method) }
        return .methodNotAllowed(label: first.label, allow: allow)
    }
}
