import ChannelAPI
import Foundation
import HeraldHTTP

/// Helpers shared by the relay protocols (pure, except ``forEachConcurrently(_:limit:_:)``).
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

    /// `Retry-After` of `response`, relative to `now`.
    static func retryAfter(_ response: HTTPResponse, now: Date) -> Duration? {
        response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
    }

    /// The reason text for a transport error.
    static func transportReason(_ error: HTTPError) -> String { "\(error.code.rawValue): \(error.message)" }

    /// Runs `body` for every item with at most `limit` in flight; results keep the input order.
    static func forEachConcurrently<T: Sendable, R: Sendable>(
        _ items: [T], limit: Int, _ body: @escaping @Sendable (T) async -> R
    ) async -> [R] {
        guard items.count > 1 else {
            var out: [R] = []
            for item in items { out.append(await body(item)) }
            return out
        }
        return await withTaskGroup(of: (Int, R).self) { group in
            var results = [R?](repeating: nil, count: items.count)
            var next = 0
            while next < items.count, next < limit {
                let i = next
                group.addTask { (i, await body(items[i])) }
                next += 1
            }
            while let (i, r) = await group.next() {
                results[i] = r
                if next < items.count {
                    let j = next
                    group.addTask { (j, await body(items[j])) }
                    next += 1
                }
            }
            return results.compactMap { $0 }
        }
    }

    /// A UUID (version 4 layout) from 16 bytes of `random`, lower case.
    static func uuid(_ random: any RandomSource) -> String {
        var b = random.bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let hex = b.map { String(format: "%02x", $0) }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20])
            + "-" + String(c[20..<32])
    }

    /// Lower-case hex of `bytes`.
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
