import Foundation

/// Reads a pipe to its end on a thread of its own, with blocking `read(2)` calls.
///
/// Foundation's `FileHandle.readabilityHandler` installs a libdispatch read source, and tearing such
/// sources down from several threads at once corrupts libdispatch's epoll bookkeeping on Linux
/// (swift-corelibs-libdispatch issue 949): the test process crashed with SIGSEGV in libdispatch in a
/// clean-clone CI run. A blocking read never registers the descriptor with libdispatch, so there is
/// no source to tear down.
enum PipeDrain {
    /// Starts the reader thread.
    /// - Parameters:
    ///   - handle: The pipe's read end; the thread closes it at end of file.
    ///   - name: The thread's name, for debuggers and crash reports.
    ///   - receive: Called on the reader thread with each chunk read, and once with empty data at
    ///     end of file (or on a read error).
    static func start(_ handle: FileHandle, name: String, receive: @escaping @Sendable (Data) -> Void) {
        let thread = Thread {
            let descriptor = handle.fileDescriptor
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count > 0 {
                    receive(Data(buffer[0..<count]))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            // Closed here, not left to the handle's deinit: Foundation keeps a `Process` (and the pipes
            // it was given) alive until its own monitor sees the child end, which it never does for a
            // child the test reaped itself, and a full run leaked a thousand pipes that way (Process.run
            // then crashed in a memcpy with that many descriptors open).
            try? handle.close()
            receive(Data())
        }
        thread.name = name
        thread.start()
    }
}
