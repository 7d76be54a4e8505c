import CMicroHTTPD
import HeraldSync

/// A response body written from Swift while the client reads it (Server-Sent Events).
///
/// libmicrohttpd pulls the body through a content-reader callback. A callback that returns 0
/// because nothing is ready makes the daemon call it again at once (a busy loop), so when the
/// buffer is empty the callback suspends the connection instead, and ``write(_:)`` or ``finish()``
/// resumes it. A suspended connection never times out; the writer keeps its own timers
/// (keepalives), and a write to a client that has gone is how the stream learns it is closed.
public final class ResponseStream: Sendable {
    struct State {
        var buffer: [UInt8] = []
        var finished = false
        /// The response was freed: the client is gone or the stream ended; writes are refused.
        var closed = false
        /// The connection, while it is suspended waiting for data (as a bit pattern).
        var suspended: Int?
        /// The connection the response is queued on (as a bit pattern).
        var connection: Int?
        var onClose: [@Sendable () -> Void] = []
    }

    let state = Locked(State())
    /// The most bytes buffered before ``write(_:)`` refuses more (a reader that stopped reading).
    public let bufferLimit: Int

    /// Creates a stream that buffers at most `bufferLimit` unread bytes.
    public init(bufferLimit: Int = 4 << 20) { self.bufferLimit = bufferLimit }

    /// Appends bytes for the client. Returns false when the client is gone, the stream is finished,
    /// or the client has stopped reading (more than ``bufferLimit`` unread): stop writing then.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        state.withLock { s in
            guard !s.closed, !s.finished, s.buffer.count + bytes.count <= bufferLimit else { return false }
            s.buffer.append(contentsOf: bytes)
            ResponseStream.resume(&s)
            return true
        }
    }

    /// Ends the response once the buffered bytes are sent.
    public func finish() {
        state.withLock { s in
            guard !s.finished else { return }
            s.finished = true
            if !s.closed { ResponseStream.resume(&s) }
        }
    }

    /// Whether the response is over (the client went away, or it was finished and sent).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Runs `body` once when the response is over (at once if it already is).
    public func onClose(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            if s.closed { return true }
            s.onClose.append(body)
            return false
        }
        if now { body() }
    }

    private static func resume(_ s: inout State) {
        if let c = s.suspended {
            s.suspended = nil
            MHD_resume_connection(OpaquePointer(bitPattern: c))
        }
    }

    /// The content-reader side: copies up to `max` bytes into `buffer`; suspends `connection` when
    /// nothing is ready. Returns the count, 0 (suspended), or MHD's end-of-stream value.
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        state.withLock { s in
            if !s.buffer.isEmpty {
                let n = min(max, s.buffer.count)
                s.buffer.withUnsafeBufferPointer { src in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: src.baseAddress!, byteCount: n)
                }
                s.buffer.removeFirst(n)
                return n
            }
            if s.finished || s.closed { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
            guard let connection = s.connection else { return -1 }
            s.suspended = connection
            MHD_suspend_connection(OpaquePointer(bitPattern: connection))
            return 0
        }
    }

    /// Records the connection the response is queued on (before the first read).
    func attach(connection: OpaquePointer) {
        state.withLock { $0.connection = Int(bitPattern: connection) }
    }

    /// The response was freed: the stream is closed for good.
    func markClosed() {
        let callbacks = state.withLock { s -> [@Sendable () -> Void] in
            s.closed = true
            s.suspended = nil
            s.buffer = []
            let c = s.onClose
            s.onClose = []
            return c
        }
        for c in callbacks { c() }
    }

    /// Whether the connection waits, suspended, for data.
    var isSuspended: Bool { state.withLock { $0.suspended != nil } }
}
