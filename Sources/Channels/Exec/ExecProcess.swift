import Foundation
import HeraldSync

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a plugin process could not be started.
struct ExecSpawnError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    let message: String
    var description: String { message }
}

/// A running child process with pipes on its stdin, stdout and stderr: the one place the exec
/// channel makes system calls (posix_spawn, read, write, kill, waitpid). No C type leaves it.
///
/// Its pipe ends in this process are close-on-exec, so a second plugin never inherits the first
/// one's pipes. Starting one ignores `SIGPIPE` in this process (a write to a plugin that died must
/// fail, not kill Herald); the child gets the default disposition and an empty signal mask.
final class ExecProcess: Sendable {
    /// The child's process id.
    let pid: Int32
    private let input: Int32
    /// The read ends of the child's stdout and stderr.
    let output: Int32
    let errors: Int32
    private struct State {
        var inputOpen = true
        var exitStatus: Int32?
    }
    private let state = Locked(State())

    private init(pid: Int32, input: Int32, output: Int32, errors: Int32) {
        self.pid = pid
        self.input = input
        self.output = output
        self.errors = errors
    }

    /// Starts `argv` (the first element is looked up on `PATH` when it has no `/`) in `directory`
    /// with `environment` (nil keeps this process's).
    static func spawn(_ argv: [String], environment: [String: String]?, directory: String?) throws(ExecSpawnError)
        -> ExecProcess
    {
        guard let first = argv.first, !first.isEmpty else { throw ExecSpawnError(message: "command is empty") }
        // The working directory is set by `sh` (glibc's posix_spawn_file_actions_addchdir_np is not
        // visible to Swift): `sh -c 'cd "$0" && exec "$@"' DIR PROGRAM ARGS…`.
        let argv = directory.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0] + argv } ?? argv
        let program = argv[0]
        ProcessSpawn.lock.lock()
        defer { ProcessSpawn.lock.unlock() }
        signal(SIGPIPE, SIG_IGN)
        var fds: [[Int32]] = []
        for _ in 0..<3 {
            var p: [Int32] = [-1, -1]
            // Both ends close-on-exec at once after creation (`pipe2` is not visible to Swift here):
            // spawns are serialised by `ProcessSpawn.lock`, so no other plugin start can inherit them.
            guard pipe(&p) == 0, fcntl(p[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(p[1], F_SETFD, FD_CLOEXEC) == 0 else {
                if p[0] >= 0 { close(p[0]) }
                if p[1] >= 0 { close(p[1]) }
                for fd in fds.joined() { close(fd) }
                throw ExecSpawnError(message: "pipe: \(String(cString: strerror(errno)))")
            }
            fds.append(p)
        }
        // Child ends: stdin reads fds[0][0]; stdout writes fds[1][1]; stderr writes fds[2][1].
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0][0], 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1][1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[2][1], 2)
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let env = environment.map { e in e.map { "\($0.key)=\($0.value)" } }
        var pid: pid_t = 0
        let rc = withCStrings(argv) { args in
            if let env {
                return withCStrings(env) { envp in posix_spawnp(&pid, program, &actions, &attr, args, envp) }
            }
            return posix_spawnp(&pid, program, &actions, &attr, args, environ)
        }
        for (i, p) in fds.enumerated() { close(i == 0 ? p[0] : p[1]) }
        guard rc == 0 else {
            close(fds[0][1])
            close(fds[1][0])
            close(fds[2][0])
            throw ExecSpawnError(message: "cannot start \(program): \(String(cString: strerror(rc)))")
        }
        return ExecProcess(pid: pid, input: fds[0][1], output: fds[1][0], errors: fds[2][0])
    }

    /// Writes all of `bytes` to the child's stdin, blocking. False when the pipe is closed or broken.
    func write(_ bytes: [UInt8]) -> Bool {
        guard state.withLock({ $0.inputOpen }) else { return false }
        return bytes.withUnsafeBytes { buf -> Bool in
            var done = 0
            while done < buf.count {
                let n = Glibc.write(input, buf.baseAddress! + done, buf.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                done += n
            }
            return true
        }
    }

    /// Closes the child's stdin (it reads end of file).
    func closeInput() {
        let wasOpen = state.withLock { s in
            defer { s.inputOpen = false }
            return s.inputOpen
        }
        if wasOpen { close(input) }
    }

    /// Reads up to `into.count` bytes from `fd` (``output`` or ``errors``), blocking; 0 at end of file.
    func read(_ fd: Int32, into buffer: inout [UInt8]) -> Int {
        buffer.withUnsafeMutableBytes { b in
            while true {
                let n = Glibc.read(fd, b.baseAddress!, b.count)
                if n < 0 && errno == EINTR { continue }
                return max(n, 0)
            }
        }
    }

    /// Sends `SIGTERM` (or `SIGKILL` when `kill` is true), unless the child was reaped already (its
    /// pid may then belong to another process).
    func terminate(forcibly kill: Bool) {
        state.withLock { s in
            if s.exitStatus == nil { _ = Glibc.kill(pid, kill ? SIGKILL : SIGTERM) }
        }
    }

    /// Whether the child was reaped; reaps it when it has exited.
    func reap() -> Bool {
        state.withLock { s in
            if s.exitStatus != nil { return true }
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno == ECHILD) { s.exitStatus = status }
            return s.exitStatus != nil
        }
    }

    /// Closes a read end (``output`` or ``errors``) once its reader reached end of file.
    func closeReading(_ fd: Int32) { close(fd) }

    /// Waits (polling every 5 ms) until the child exits: `grace` for it to exit by itself, then
    /// `SIGTERM` and `grace` again, then `SIGKILL`, and reaps it. Returns how it ended.
    func end(grace: Duration) -> String {
        let deadline = { ContinuousClock.now.advanced(by: grace) }
        var until = deadline()
        var step = 0
        while !reap() {
            if ContinuousClock.now >= until, step < 2 {
                step += 1
                terminate(forcibly: step == 2)
                until = deadline()
            }
            usleep(5_000)
        }
        closeInput()
        let status = state.withLock { $0.exitStatus ?? 0 }
        let signalled = status & 0x7f
        if signalled != 0 && signalled != 0x7f { return "killed by signal \(signalled)" }
        return "exited with status \((status >> 8) & 0xff)"
    }
}

/// Serialises plugin starts: their pipes are made close-on-exec just after creation.

/// Calls `body` with a NULL-terminated C array of copies of `strings`.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return body(pointers)
}
