import CCurl
import CHeraldShims
import ChannelAPI
import HeraldSync
import Synchronization

/// A finished response as the loop thread hands it over. Header lines stay raw so that parsing them
/// happens on the caller's thread, not on the event loop, which is the serial bottleneck.
struct RawResponse: Sendable {
    var status: Int
    var version: HTTPVersion
    /// The header lines of the final response, each with its line ending, status line excluded.
    var headerBytes: [UInt8]
    var body: [UInt8]

    /// Parses the header lines into an ``HTTPResponse``.
    func response() -> HTTPResponse {
        var headers: [HTTPHeader] = []
        var lineStart = headerBytes.startIndex
        while lineStart < headerBytes.endIndex {
            let lineEnd = headerBytes[lineStart...].firstIndex(of: 0x0A) ?? headerBytes.endIndex
            var line = headerBytes[lineStart..<lineEnd]
            lineStart = lineEnd < headerBytes.endIndex ? lineEnd + 1 : lineEnd
            while let last = line.last, last == 0x0D { line = line.dropLast() }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
            while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
            headers.append(
                HTTPHeader(String(decoding: line[..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        return HTTPResponse(status: status, headers: headers, body: body, version: version)
    }
}

/// The outcome handed back to a waiting ``HTTPClient/send(_:)``.
typealias TransferResult = Result<RawResponse, HTTPError>

/// Links a waiting `send` with its transfer so that task cancellation can find it.
final class RequestToken: Sendable {
    private static let idle: UInt8 = 0
    private static let submitted: UInt8 = 1
    private static let cancelled: UInt8 = 2
    private let state = Atomic<UInt8>(RequestToken.idle)

    /// Marks the request as handed to a loop. Returns `false` when it was cancelled first.
    func markSubmitted() -> Bool {
        state.compareExchange(expected: Self.idle, desired: Self.submitted, ordering: .acquiringAndReleasing)
            .exchanged
    }

    /// Marks the request cancelled. Returns `true` when a loop already holds it and must be told.
    func cancel() -> Bool {
        state.exchange(Self.cancelled, ordering: .acquiringAndReleasing) == Self.submitted
    }

    /// Whether ``cancel()`` has been called.
    var isCancelled: Bool { state.load(ordering: .acquiring) == Self.cancelled }
}

/// A request on its way to an event loop. Its header list is built by the caller, off the loop thread.
struct Job: Sendable {
    let request: HTTPRequest
    let headerList: HeaderList
    /// ``HostKey/of(_:)`` of the URL, computed by the caller.
    let host: String
    let token: RequestToken
    let continuation: UnsafeContinuation<TransferResult, Never>
}

/// One request of a ``BatchJob``: the request and its header list, built by the caller.
struct BatchItem: Sendable {
    let request: HTTPRequest
    let headerList: HeaderList
    /// ``HostKey/of(_:)`` of the URL, computed by the caller.
    let host: String
}

/// Many requests handed to one loop at once. The loop keeps at most `limit` of them in flight, starts the
/// next as one finishes, and resumes the caller once with every result, so a fan-out costs the loop no
/// task, continuation or executor hop per request.
///
/// `@unchecked Sendable`: the immutable parts are set before submission; `results`, `next`, `inFlight`
/// and `done` are touched only by the loop thread after submission.
final class BatchJob: @unchecked Sendable {
    let items: [BatchItem]
    let limit: Int
    let token: RequestToken
    let continuation: UnsafeContinuation<[TransferResult], Never>
    var results: [TransferResult?]
    /// The next item to start.
    var next = 0
    var inFlight = 0
    var done = 0

    init(
        items: [BatchItem], limit: Int, token: RequestToken, continuation: UnsafeContinuation<[TransferResult], Never>
    ) {
        self.items = items
        self.limit = max(1, limit)
        self.token = token
        self.continuation = continuation
        results = Array(repeating: nil, count: items.count)
    }
}

/// A request waiting in the loop for a free stream of its host.
struct ParkedRequest {
    let request: HTTPRequest
    let headerList: HeaderList
    let host: String
    let completion: Completion
}

/// Work queued for a loop, in submission order.
enum Work: Sendable {
    case single(Job)
    case batch(BatchJob)
}

/// Whom a finished transfer reports to.
enum Completion {
    case single(RequestToken, UnsafeContinuation<TransferResult, Never>)
    case batch(BatchJob, Int)
}

/// A pooled libcurl easy handle plus its error buffer. Used only on its event loop's thread.
final class EasyHandle {
    let handle: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>

    init?() {
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    /// The error buffer's text; empty when libcurl wrote none.
    var errorText: String { String(cString: errorBuffer) }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }
}

/// A libcurl header list built from a request's headers, freed when the last transfer using it is done.
///
/// `@unchecked Sendable`: it is built by the caller and never changed afterwards; the loop thread only
/// hands `list` to libcurl, which reads it while the transfer runs.
final class HeaderList: @unchecked Sendable {
    private(set) var list: UnsafeMutablePointer<curl_slist>?
    /// Whether every line could be appended (false means out of memory).
    private(set) var complete = true

    /// Builds the list: the caller's headers, plus removal of libcurl's implicit `Expect` and form
    /// `Content-Type` headers when the caller sets none.
    init(_ headers: [HTTPHeader]) {
        var hasContentType = false
        var hasExpect = false
        var line: [UInt8] = []
        line.reserveCapacity(256)
        for header in headers {
            if !hasContentType && HTTPHeader.namesEqual(header.name, "content-type") { hasContentType = true }
            if !hasExpect && HTTPHeader.namesEqual(header.name, "expect") { hasExpect = true }
            // "name: value", or "name;" for an empty value (libcurl's way to send one), NUL-terminated.
            line.removeAll(keepingCapacity: true)
            line.append(contentsOf: header.name.utf8)
            if header.value.isEmpty {
                line.append(UInt8(ascii: ";"))
            } else {
                line.append(UInt8(ascii: ":"))
                line.append(UInt8(ascii: " "))
                line.append(contentsOf: header.value.utf8)
            }
            line.append(0)
            line.withUnsafeBufferPointer { bytes in
                bytes.baseAddress!.withMemoryRebound(to: CChar.self, capacity: bytes.count) { append($0) }
            }
        }
        if !hasExpect { append("Expect:") }
        if !hasContentType { append("Content-Type:") }
    }

    private func append(_ line: UnsafePointer<CChar>) {
        if let next = curl_slist_append(list, line) { list = next } else { complete = false }
    }

    deinit {
        if let list { curl_slist_free_all(list) }
    }
}

/// One in-flight transfer. Owned by the event loop's thread; libcurl callbacks receive it unretained.
final class Transfer {
    let completion: Completion
    let easy: EasyHandle
    /// The request's ``HostKey``, for the loop's per-host limit.
    let host: String
    let limit: Int
    var headerList: HeaderList?
    var headerBytes: [UInt8] = []
    var body: [UInt8] = []
    var tooLarge = false
    /// Set by the address check (``AddressPolicy/publicOnly``) when it refused a peer address: the
    /// address and its class, for the error.
    var blockedAddress: String?

    init(completion: Completion, easy: EasyHandle, host: String, limit: Int) {
        self.completion = completion
        self.easy = easy
        self.host = host
        self.limit = limit
        headerBytes.reserveCapacity(512)
    }

    /// The batch this transfer belongs to, if any.
    var batch: BatchJob? {
        if case .batch(let batch, _) = completion { return batch }
        return nil
    }

    /// Drops this transfer's hold on the request header list.
    func releaseHeaders() { headerList = nil }

    /// Appends a chunk of the response body; `false` when the limit would be exceeded.
    func appendBody(_ chunk: UnsafeRawBufferPointer) -> Bool {
        if body.count + chunk.count > limit {
            tooLarge = true
            return false
        }
        body.append(contentsOf: chunk)
        return true
    }

    /// Records one raw header line; a status line starts a new response, dropping `1xx` headers.
    func appendHeaderLine(_ line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            headerBytes.removeAll(keepingCapacity: true)
            return
        }
        headerBytes.append(contentsOf: line)
    }
}
