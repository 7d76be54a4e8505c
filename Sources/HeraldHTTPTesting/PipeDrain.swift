import Foundation
import HeraldProcess

/// Reads a child's stdout or stderr to its end on a thread of its own, with blocking `read(2)` calls.
///
/// Foundation's `FileHandle.readabilityHandler` installs a libdispatch read source, and tearing such
/// sources down from several threads at once corrupts libdispatch's epoll bookkeeping on Linux
/// (swift-corelibs-libdispatch issue 949): the test process crashed with SIGSEGV in libdispatch in a
/// clean-clone CI run. A blocking read never registers the descriptor with libdispatch, so there is
/// no source to tear down.
enum PipeDrain {
    /// Starts the reader thread.
    /// - Parameters:
    ///   - child: The child whose pipe is read.
    ///   - fd: ``ChildProcess/output`` or ``ChildProcess/errors``; the thread closes it at end of file.
    ///   - name: The thread's name, for debuggers and crash reports.
    ///   - receive: Called on the reader thread with each chunk read, and once with empty data at
    ///     end of file (or on a read error).
    static func start(
        _ child: ChildProcess, _ fd: Int32, name: String, receive: @escaping @Sendable (Data) -> Void
    ) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while case let count = child.read(fd, into: &buffer), count > 0 {
                receive(Data(buffer[0..<count]))
            }
            child.closeReading(fd)
            receive(Data())
        }
        thread.name = name
        thread.start()
    }

    /// Reads `fd` of `child` to its end on the calling thread, then closes it.
    static func readAll(_ child: ChildProcess, _ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while case let count = child.read(fd, into: &buffer), count > 0 { out += buffer[0..<count] }
        child.closeReading(fd)
        return out
    }
}
