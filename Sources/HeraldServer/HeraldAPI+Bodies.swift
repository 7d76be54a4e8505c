import ChannelAPI
import Foundation
import HeraldMHD

/// What every resource reads and writes: JSON bodies, JSON answers, the `namespace` parameter.
extension HeraldAPI {
    /// The body as a JSON object: 415 unless `Content-Type` is `application/json`, 400 when it is
    /// not JSON (with the byte offset) or not an object.
    static func jsonObject(_ request: ServerRequest) throws -> JSONValue {
        let type = (request.header("content-type") ?? "").split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard type == "application/json" else {
            throw APIError(
                415, "unsupported_media_type",
                "send the body as Content-Type: application/json (got \(request.header("content-type") ?? "none"))")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(request.body)
        } catch {
            throw APIError(400, "invalid_json", error.description)
        }
        guard case .object = value else {
            throw APIError(400, "invalid_json", "the body must be a JSON object, not \(value.kindName)")
        }
        return value
    }

    static func json(_ status: Int, _ value: JSONValue, headers: [(name: String, value: String)] = [])
        -> ServerResponse
    {
        ServerResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers,
            body: .bytes(value.canonicalBytes + [0x0A]))
    }

    static func namespaceParameter(_ request: ServerRequest) throws -> String {
        let ns = request.query["namespace"] ?? "default"
        guard !ns.isEmpty else { throw APIError.badParameter("namespace", "must not be empty") }
        return ns
    }
}
