import Foundation

/// The lock every start of a child process takes (`HeraldProcess.ChildProcess`: the exec channel's
/// plugins, the test kit's subprocesses), so that no two starts overlap: a pipe made for one child
/// gets close-on-exec just after `pipe()`, and a second start in that moment would hand the pipe to
/// the wrong child, whose copy then keeps the first child's stdin open after Herald closed it.
public enum ProcessSpawn {
    /// Held for the whole of one start (pipes, spawn, closing the parent's ends).
    public static let lock = NSLock()
}
