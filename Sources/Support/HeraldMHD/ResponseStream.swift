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
        /// Unread bytes: the chunks as written (no copy into one growing array, no shifting on
        /// read), the first one read from `offset`.
        var chunks: [[UInt8]] = []
        var head = 0
        var offset = 0
        var buffered = 0
        /// A writer waiting until at most `lowWater` bytes are unread (``waitForRoom(atMost:)``).
        var roomWaiter: (lowWater: Int, id: UInt64, resume: CheckedContinuation<Void, Never>)?
        var nextWaiterId: UInt64 = 0
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

    /// Whether the server ends this stream when it stops (an event stream, which the client resumes),
    /// or lets its writer finish it within the stop's bounded wait (a document written in pieces).
    public let endsWhenServerStops: Bool

    /// Creates a stream that buffers at most `bufferLimit` unread bytes; `endsWhenServerStops`
    /// false for a body that must be whole (see ``endsWhenServerStops``).
    public init(bufferLimit: Int = 4 << 20, endsWhenServerStops: Bool = true) {
        self.bufferLimit = bufferLimit
        self.endsWhenServerStops = endsWhenServerStops
    }

    /// Appends bytes for the client. Returns false when the client is gone, the stream is finished,
    /// or the client has stopped reading (more than ``bufferLimit`` unread): stop writing then.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        state.withLock { s in
            guard !s.closed, !s.finished, s.buffered + bytes.count <= bufferLimit else { return false }
            guard !bytes.isEmpty else { return true }
            s.chunks.append(bytes)
            s.buffered += bytes.count
            ResponseStream.resume(&s)
            return true
        }
    }

    /// How many written bytes the client has not read yet.
    public var bufferedCount: Int { state.withLock { $0.buffered } }

    /// Waits until at most `lowWater` written bytes are unread or the stream is over (closed or
    /// finished), and returns true; returns false when `timeout` passes first (the client stopped
    /// reading: end the stream). A writer calls it before writing more, so a slow reader holds at
    /// most about `lowWater` plus one write in memory here instead of everything written to it.
    /// One waiter at a time.
    public func waitForRoom(atMost lowWater: Int, timeout: Duration) async -> Bool {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiterId += 1
            return s.nextWaiterId
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.endRoomWait(id)
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.closed || s.finished || s.buffered <= lowWater { return true }
                let previous = s.roomWaiter
                s.roomWaiter = (lowWater, id, c)
                previous?.resume.resume()
                return false
            }
            if now { c.resume() }
        }
        timer.cancel()
        return state.withLock { $0.closed || $0.finished || $0.buffered <= lowWater }
    }

    /// Ends the wait `id` if it is still waiting (its timeout passed).
    private func endRoomWait(_ id: UInt64) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.roomWaiter, w.id == id else { return nil }
            s.roomWaiter = nil
            return w.resume
        }
        waiter?.resume()
    }

    /// Ends the response once the buffered bytes are sent.
    public func finish() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard !s.finished else { return nil }
            s.finished = true
            if !s.closed { ResponseStream.resume(&s) }
            defer { s.roomWaiter = nil }
            return s.roomWaiter?.resume
        }
        waiter?.resume()
    }

    /// Whether the response is over (the client went away, or it was finished and sent).
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether nothing more may be written: the response was finished (its last bytes may still be
    /// on their way) or the client went away.
    public var isFinished: Bool { state.withLock { $0.finished || $0.closed } }

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
        let (count, waiter) = state.withLock { s -> (Int, CheckedContinuation<Void, Never>?) in
            if s.buffered > 0 {
                var copied = 0
                let out = UnsafeMutableRawPointer(buffer)
                while copied < max, s.head < s.chunks.count {
                    let n = s.chunks[s.head].withUnsafeBytes { src -> Int in
                        let n = min(max - copied, src.count - s.offset)
                        (out + copied).copyMemory(from: src.baseAddress! + s.offset, byteCount: n)
                        return n
                    }
                    copied += n
                    s.offset += n
                    if s.offset == s.chunks[s.head].count {
                        s.chunks[s.head] = []
                        s.head += 1
                        s.offset = 0
                    }
                }
                s.buffered -= copied
                if s.head == s.chunks.count {
                    s.chunks.removeAll(keepingCapacity: true)
                    s.head = 0
                } else if s.head >= 64 {
                    s.chunks.removeFirst(s.head)
                    s.head = 0
                }
                var waiter: CheckedContinuation<Void, Never>?
                if let w = s.roomWaiter, s.buffered <= w.lowWater {
                    waiter = w.resume
                    s.roomWaiter = nil
                }
                return (copied, waiter)
            }
            if s.finished || s.closed { return (-1, nil) }  // MHD_CONTENT_READER_END_OF_STREAM
            guard let connection = s.connection else { return (-1, nil) }
            s.suspended = connection
            MHD_suspend_connection(OpaquePointer(bitPattern: connection))
            return (0, nil)
        }
        waiter?.resume()
        return count
    }

    /// Records the connection the response is queued on (before the first read).
    func attach(connection: OpaquePointer) {
        state.withLock { $0.connection = Int(bitPattern: connection) }
    }

    /// The response was freed: the stream is closed for good.
    func markClosed() {
        let (callbacks, waiter) = state.withLock { s -> ([@Sendable () -> Void], CheckedContinuation<Void, Never>?) in
            s.closed = true
            s.suspended = nil
            s.chunks = []
            s.head = 0
            s.offset = 0
            s.buffered = 0
            let c = s.onClose
            s.onClose = []
            defer { s.roomWaiter = nil }
            return (c, s.roomWaiter?.resume)
        }
        waiter?.resume()
        for c in callbacks { c() }
    }

    /// Whether the connection waits, suspended, for data.
    var isSuspended: Bool { state.withLock { $0.suspended != nil } }
}
