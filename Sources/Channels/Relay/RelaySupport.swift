import ChannelAPI
import Foundation

/// Helpers shared by the relay protocols (pure).
enum RelaySupport {
    /// The relay's own explanation for an answer: the JSON body's `error`, `code`, `message` or
    /// `errorMessage` (in that order), else the first 200 bytes of the body, prefixed with the status.
    static func reason(status: Int, body: [UInt8]) -> String {
        if let object = (try? JSONValue.parse(body))?.objectValue {
            for key in ["error", "code", "message", "errorMessage", "errorType"] {
                if let text = object[key]?.stringValue, !text.isEmpty { return "relay answered \(status): \(text)" }
            }
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "relay answered \(status)" : "relay answered \(status): \(text)"
    }

    /// The reason text for a transport error.
    static func transportReason(_ error: HTTPError) -> String { "\(error.code.rawValue): \(error.message)" }
}
