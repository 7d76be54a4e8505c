import Foundation

/// Splits a fuzzer's bytes into the parts of a provider answer: a status, a `Retry-After`
/// value and a body. Layout: two bytes of status (mod 600), then the `Retry-After` text up to the
/// first newline, then the body. Every byte string is a valid input.
public struct FuzzInput: Sendable {
    /// The HTTP status, 0–599.
    public let status: Int
    /// The `Retry-After` header text, nil when empty.
    public let retryAfter: String?
    /// The body bytes.
    public let body: [UInt8]
    /// The whole input as text (invalid UTF-8 repaired), for text parsers.
    public let text: String

    /// Reads `size` bytes at `data`.
    public init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        let bytes = Array(UnsafeBufferPointer(start: data, count: size))
        text = String(decoding: bytes, as: UTF8.self)
        guard bytes.count >= 2 else {
            status = 200
            retryAfter = nil
            body = bytes
            return
        }
        status = (Int(bytes[0]) << 8 | Int(bytes[1])) % 600
        let rest = bytes.dropFirst(2)
        if let newline = rest.firstIndex(of: 10) {
            let header = String(decoding: rest[rest.startIndex..<newline], as: UTF8.self)
            retryAfter = header.isEmpty ? nil : header
            body = Array(rest[(newline + 1)...])
        } else {
            retryAfter = nil
            body = Array(rest)
        }
    }

    /// A fixed clock reading, so runs are reproducible.
    public static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The longest delay Herald may take from a provider's answer (`RetryAfter.maximum`, one day).
    public static let longestDelay: Duration = .seconds(86_400)

    /// Checks a delay a classifier read from a provider's answer: it must lie in `0...`one day, the
    /// ceiling every delay from the network is clamped to (issue 15 item 1). A longer one is a defect
    /// even when the classifier itself does not trap: the outbox later turns it into a date and then
    /// into milliseconds, and a huge value traps there (`Retry-After: 99999999999999999` killed every
    /// worker this way).
    public static func checkDelay(_ delay: Duration?, _ what: @autoclosure () -> String) {
        guard let delay else { return }
        precondition(delay >= .zero && delay <= longestDelay, "\(what()): delay \(delay) outside 0...1 day")
    }
}
