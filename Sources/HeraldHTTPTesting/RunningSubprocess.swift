import Foundation
import HeraldProcess
import HeraldSync

extension Subprocess {
    /// Starts a program that runs alongside the test (a worker to send signals to, a sender to kill
    /// mid-way) and collects its stdout and stderr in the background.
    /// - Parameters:
    ///   - executable: A path (when it contains `/`) or a program name looked up on `PATH`.
    ///   - arguments: The arguments, without the program name.
    ///   - environment: Variables set on top of this process's environment (a given value wins).
    ///   - currentDirectory: The working directory; `nil` keeps this process's.
    /// - Returns: The running program. Releasing the handle kills a program still running.
    /// - Throws: ``SubprocessError`` when the program is not found or cannot be started.
    public static func launch(
        executable: String, arguments: [String] = [], environment: [String: String] = [:],
        currentDirectory: String? = nil
    ) throws -> RunningSubprocess {
        let child = try spawn(
            executable: executable, arguments: arguments, environment: environment,
            currentDirectory: currentDirectory, stdin: false)
        return RunningSubprocess(child: child)
    }
}

/// A program started with ``Subprocess/launch(executable:arguments:environment:currentDirectory:)``.
public final class RunningSubprocess: Sendable {
    private let child: ChildProcess
    private let collected = Locked(Collected())

    private struct Collected {
        var stdout = Data()
        var stderr = Data()
        var openStreams = 2
    }

    init(child: ChildProcess) {
        self.child = child
        let collected = collected
        PipeDrain.start(child, child.output, name: "herald.subprocess.stdout") { data in
            collected.withLock { if data.isEmpty { $0.openStreams -= 1 } else { $0.stdout.append(data) } }
        }
        PipeDrain.start(child, child.errors, name: "herald.subprocess.stderr") { data in
            collected.withLock { if data.isEmpty { $0.openStreams -= 1 } else { $0.stderr.append(data) } }
        }
    }

    deinit {
        if child.isRunning {
            child.send(SIGKILL)
            _ = child.waitForExit()
        }
    }

    /// The program's process id.
    public var processIdentifier: Int32 { child.pid }

    /// Whether the program is still running.
    public var isRunning: Bool { child.isRunning }

    /// What the program has written to stdout so far (UTF-8, invalid sequences replaced).
    public var stdout: String { String(decoding: collected.withLock { $0.stdout }, as: UTF8.self) }

    /// What the program has written to stderr so far (UTF-8, invalid sequences replaced).
    public var stderr: String { String(decoding: collected.withLock { $0.stderr }, as: UTF8.self) }

    /// Sends a signal to the program.
    /// - Parameter signal: The signal, for example `SIGHUP`.
    public func send(_ signal: Int32) { child.send(signal) }

    /// Waits until stderr holds `text` at least `occurrences` times, or `timeout` passes.
    /// - Parameters:
    ///   - text: The text to wait for.
    ///   - occurrences: How many times it must appear.
    ///   - timeout: How long to wait at most.
    /// - Returns: Stderr so far, whether or not the text appeared (assert on it).
    /// - Throws: `CancellationError` when the task is cancelled.
    public func waitForStderr(_ text: String, occurrences: Int = 1, timeout: Duration = .seconds(20)) async throws
        -> String
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = stderr
            if seen.components(separatedBy: text).count > occurrences || ContinuousClock.now >= deadline {
                return seen
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits for the program to end and for its output to be read to the end.
    /// - Parameter timeout: How long to wait at most.
    /// - Returns: The exit status and all output, or `nil` when the program still runs after `timeout`.
    /// - Throws: `CancellationError` when the task is cancelled.
    public func waitForExit(timeout: Duration = .seconds(20)) async throws -> Subprocess.Result? {
        let deadline = ContinuousClock.now + timeout
        while child.isRunning {
            if ContinuousClock.now >= deadline { return nil }
            try await Task.sleep(for: .milliseconds(50))
        }
        // The pipes reach end of file once the program (and anything it started) has closed them.
        let drained = ContinuousClock.now + .seconds(5)
        while collected.withLock({ $0.openStreams > 0 }) && ContinuousClock.now < drained {
            try await Task.sleep(for: .milliseconds(10))
        }
        let (output, errors) = collected.withLock { ($0.stdout, $0.stderr) }
        let (code, signalled) = child.termination ?? (0, false)
        return Subprocess.Result(
            code: code, terminatedBySignal: signalled, stdoutBytes: Array(output), stderrBytes: Array(errors))
    }

    /// Kills the program with `SIGKILL` and waits for it.
    /// - Returns: How it ended and its output.
    /// - Throws: `CancellationError` when the task is cancelled.
    @discardableResult
    public func kill() async throws -> Subprocess.Result {
        send(SIGKILL)
        // waitForExit polls without holding a thread (a blocking wait would hold one of the pool's).
        guard let result = try await waitForExit() else { throw SubprocessError("still running after SIGKILL") }
        return result
    }
}
