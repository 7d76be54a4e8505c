import CHeraldShims
import HeraldSync

#if canImport(Glibc)
    import Glibc
#endif

/// Why a child process could not be started.
public struct SpawnError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    /// The message.
    public var description: String { message }
}

/// A running child process with pipes on its stdout and stderr (and on its stdin, or `/dev/null`):
/// the one place Herald starts programs (the exec channel's plugins, the test kit's subprocesses).
/// No C type leaves it.
///
/// `posix_spawn`, not Foundation's `Process`: on Linux `Process.run()` lists `/proc/self/fd` and
/// copies each entry's whole 256-byte `d_name`, which reads past glibc's directory buffer and
/// crashed the test process in a `memcpy` when many descriptors were open (`make test-loaded`).
/// The child gets only its three standard descriptors (`closefrom(3)` in the child, so it never
/// inherits another child's pipes or Herald's sockets), the default `SIGPIPE` disposition and an
/// empty signal mask, whichever thread starts it. Starting one ignores `SIGPIPE` in this process:
/// a write to a child that died must fail, not kill Herald.
public final class ChildProcess: Sendable {
    /// The child's process id.
    public let pid: Int32
    private let input: Int32
    /// The read end of the child's stdout.
    public let output: Int32
    /// The read end of the child's stderr.
    public let errors: Int32
    private struct State {
        var inputOpen: Bool
        var exitStatus: Int32?
    }
    private let state: Locked<State>

    private init(pid: Int32, input: Int32, output: Int32, errors: Int32) {
        self.pid = pid
        self.input = input
        self.output = output
        self.errors = errors
        state = Locked(State(inputOpen: input >= 0))
    }

    /// Starts `argv` (the first element is looked up on `PATH` when it has no `/`) in `directory`
    /// with `environment` (nil keeps this process's). With `stdin: false` the child reads
    /// `/dev/null`.
    public static func spawn(
        _ argv: [String], environment: [String: String]? = nil, directory: String? = nil, stdin: Bool = true
    ) throws(SpawnError) -> ChildProcess {
        guard let program = argv.first, !program.isEmpty else { throw SpawnError(message: "command is empty") }
        // One start at a time: the parent's pipe ends become close-on-exec just after `pipe()`.
        ProcessSpawn.lock.lock()
        defer { ProcessSpawn.lock.unlock() }
        signal(SIGPIPE, SIG_IGN)
        var fds: [[Int32]] = []
        func closeAll() { for fd in fds.joined() where fd >= 0 { close(fd) } }
        for i in 0..<3 {
            var p: [Int32] = [-1, -1]
            if i == 0 && !stdin {
                p[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard p[0] >= 0 else {
                    closeAll()
                    throw SpawnError(message: "/dev/null: \(String(cString: strerror(errno)))")
                }
            } else if pipe(&p) != 0 || fcntl(p[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(p[1], F_SETFD, FD_CLOEXEC) != 0 {
                let reason = String(cString: strerror(errno))
                fds.append(p)
                closeAll()
                throw SpawnError(message: "pipe: \(reason)")
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
        _ = herald_spawn_addclosefrom(&actions, 3)
        if let directory { _ = herald_spawn_addchdir(&actions, directory) }
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
            if fds[0][1] >= 0 { close(fds[0][1]) }
            close(fds[1][0])
            close(fds[2][0])
            throw SpawnError(message: "cannot start \(program): \(String(cString: strerror(rc)))")
        }
        return ChildProcess(pid: pid, input: fds[0][1], output: fds[1][0], errors: fds[2][0])
    }

    /// Writes all of `bytes` to the child's stdin, blocking. False when the pipe is closed or broken.
    public func write(_ bytes: [UInt8]) -> Bool {
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
    public func closeInput() {
        let wasOpen = state.withLock { s in
            defer { s.inputOpen = false }
            return s.inputOpen
        }
        if wasOpen { close(input) }
    }

    /// Reads up to `buffer.count` bytes from `fd` (``output`` or ``errors``), blocking; 0 at end of
    /// file or on an error.
    public func read(_ fd: Int32, into buffer: inout [UInt8]) -> Int {
        buffer.withUnsafeMutableBytes { b in
            while true {
                let n = Glibc.read(fd, b.baseAddress!, b.count)
                if n < 0 && errno == EINTR { continue }
                return max(n, 0)
            }
        }
    }

    /// Closes a read end (``output`` or ``errors``) once its reader reached end of file.
    public func closeReading(_ fd: Int32) { close(fd) }

    /// Sends `signal`, unless the child was reaped already (its pid may then belong to another
    /// process).
    public func send(_ signal: Int32) {
        state.withLock { s in
            if s.exitStatus == nil { _ = Glibc.kill(pid, signal) }
        }
    }

    /// Sends `SIGTERM` (or `SIGKILL` when `kill` is true), unless the child was reaped already.
    public func terminate(forcibly kill: Bool) { send(kill ? SIGKILL : SIGTERM) }

    /// Whether the child was reaped; reaps it when it has exited.
    public func reap() -> Bool {
        state.withLock { s in
            if s.exitStatus != nil { return true }
            var status: Int32 = 0
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno == ECHILD) { s.exitStatus = status }
            return s.exitStatus != nil
        }
    }

    /// Whether the child still runs (reaps it when it has exited).
    public var isRunning: Bool { !reap() }

    /// How it ended, once reaped: the exit status, or the signal number with `signalled` true.
    public var termination: (code: Int32, signalled: Bool)? {
        guard let status = state.withLock({ $0.exitStatus }) else { return nil }
        let signal = status & 0x7f
        return signal != 0 && signal != 0x7f ? (signal, true) : ((status >> 8) & 0xff, false)
    }

    /// Blocks until the child has ended (polling every millisecond, so that ``send(_:)`` never
    /// signals a pid reaped behind its back) and returns how.
    public func waitForExit() -> (code: Int32, signalled: Bool) {
        while !reap() { usleep(1_000) }
        return termination ?? (0, false)
    }

    /// Waits (polling every 5 ms) until the child exits: `grace` for it to exit by itself, then
    /// `SIGTERM` and `grace` again, then `SIGKILL`, and reaps it. Returns how it ended, in words.
    public func end(grace: Duration) -> String {
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
        let (code, signalled) = termination ?? (0, false)
        return signalled ? "killed by signal \(code)" : "exited with status \(code)"
    }
}

/// Calls `body` with a NULL-terminated C array of copies of `strings`.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return body(pointers)
}
