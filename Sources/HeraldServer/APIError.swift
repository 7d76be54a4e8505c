import ChannelAPI
import HeraldMHD

/// An error answer of the HTTP API (http-api.md §6): a status and
/// `{"error":{"code":…,"message":…,"field":…}}`.
public struct APIError: Error, Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// A stable machine-readable code (`invalid_json`, `forbidden`, …).
    public var code: String
    /// For people.
    public var message: String
    /// The field at fault (422), when there is one.
    public var field: String?
    /// Extra response headers (`WWW-Authenticate`, `Allow`, `Retry-After`).
    public var headers: [(name: String, value: String)] = []

    /// Creates an error.
    public init(
        _ status: Int, _ code: String, _ message: String, field: String? = nil,
        headers: [(name: String, value: String)] = []
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    /// Equal when status, code, message and field are.
    public static func == (a: APIError, b: APIError) -> Bool {
        a.status == b.status && a.code == b.code && a.message == b.message && a.field == b.field
    }

    /// The JSON body.
    public var json: JSONValue {
        var e: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let field { e["field"] = .string(field) }
        return ["error": .object(e)]
    }

    /// The response.
    public var response: ServerResponse {
        ServerResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers, body: .bytes(json.canonicalBytes)
        )
    }

    static func unauthorized(_ message: String) -> APIError {
        APIError(401, "unauthorized", message, headers: [("WWW-Authenticate", "Bearer")])
    }
    static func forbidden(_ message: String) -> APIError { APIError(403, "forbidden", message) }
    static func notFound(_ message: String) -> APIError { APIError(404, "not_found", message) }
    static func invalid(_ e: ValidationError) -> APIError { APIError(422, "invalid", e.description, field: e.field) }
    static func badParameter(_ name: String, _ message: String) -> APIError {
        APIError(400, "invalid_parameter", "\(name): \(message)", field: name)
    }
    static func unavailable(_ message: String) -> APIError { APIError(503, "unavailable", message) }
}
