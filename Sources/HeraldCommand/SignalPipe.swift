import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The write end of the signal pipe; read only by the signal handler after ``SignalPipe/install(_:queue:_:)``
/// has set it.
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// Delivers signals through a self-pipe, with no window in which one is lost.
///
/// `DispatchSource` signal sources register asynchronously, so a signal arriving just after
/// `resume()` can still hit the default or ignored disposition. Here `signal(2)` installs the handler
/// before `install` returns; the handler only writes the signal number to a non-blocking pipe (which is
/// async-signal-safe), and a read source on the pipe runs `handler` on `queue`. A byte written before the
/// read source is registered waits in the pipe.
enum SignalPipe {
    /// Installs handlers for `signals` and starts delivering them to `handler`.
    /// - Returns: The read source (keep it alive), or nil when no pipe could be created (then nothing was installed).
    static func install(
        _ signals: [Int32], queue: DispatchQueue, _ handler: @escaping @Sendable (Int32) -> Void
    ) -> DispatchSourceRead? {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        signalPipeWriteEnd = fds[1]
        let readEnd = fds[0]
        let source = DispatchSource.makeReadSource(fileDescriptor: readEnd, queue: queue)
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                for byte in buffer[0..<n] { handler(Int32(byte)) }
            }
        }
        source.resume()
        for s in signals {
            _ = signal(s) { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
        }
        return source
    }
}
