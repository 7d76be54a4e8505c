import Foundation

/// The lock every start of a child process in Herald's own code takes (the exec channel's plugins,
/// the test kit's subprocesses), so that no two starts overlap.
///
/// Two reasons. A pipe made for one child gets close-on-exec just after `pipe()`: a second start in
/// that moment would hand the pipe to the wrong child, whose copy then keeps the first child's stdin
/// open after Herald closed it. And Foundation's `Process.run()` on Linux was seen to crash in a
/// `memcpy` when another thread started a process at the same time (a full test run, session 13).
public enum ProcessSpawn {
    /// Held for the whole of one start (pipes, spawn, closing the parent's ends).
    public static let lock = NSLock()
}
