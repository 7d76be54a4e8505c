import Foundation
import HeraldProcess
import HeraldSync

/// Why ``Subprocess`` could not run a program.
public struct SubprocessError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String

    /// Creates an error.
    /// - Parameter message: What went wrong.
    public init(_ message: String) { self.message = message }

    /// The message.
    public var description: String { "Subprocess: \(message)" }
}

/// Runs programs for tests: the one place where tests start a child process.
///
/// ```swift
/// let r = try Subprocess.run(executable: "python3", arguments: ["check.py"], stdin: "{}")
/// #expect(r.code == 0, "\(r.stderr)")
/// ```
///
/// ``run(executable:arguments:stdin:environment:currentDirectory:)`` writes stdin and reads stdout and
/// stderr at the same time, so a child that writes much before it has read all its input cannot
/// deadlock the test. Running a program sets `SIGPIPE` to be ignored in this process, so that a child
/// exiting before it read its input fails the write instead of killing the test runner.
public enum Subprocess {
    /// What a finished program left behind.
    public struct Result: Sendable {
        /// The exit status, or the signal number when ``terminatedBySignal`` is `true`.
        public var code: Int32
        /// Whether the program was ended by a signal rather than exiting.
        public var terminatedBySignal: Bool
        /// Everything the program wrote to stdout.
        public var stdoutBytes: [UInt8]
        /// Everything the program wrote to stderr.
        public var stderrBytes: [UInt8]

        /// Creates a result.
        /// - Parameters:
        ///   - code: The exit status or signal number.
        ///   - terminatedBySignal: Whether a signal ended the program.
        ///   - stdoutBytes: Its stdout.
        ///   - stderrBytes: Its stderr.
        public init(code: Int32, terminatedBySignal: Bool = false, stdoutBytes: [UInt8], stderrBytes: [UInt8]) {
            self.code = code
            self.terminatedBySignal = terminatedBySignal
            self.stdoutBytes = stdoutBytes
            self.stderrBytes = stderrBytes
        }

        /// Stdout decoded as UTF-8 (invalid sequences are replaced).
        public var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
        /// Stderr decoded as UTF-8 (invalid sequences are replaced).
        public var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }
        /// Whether the program exited with status 0.
        public var succeeded: Bool { code == 0 && !terminatedBySignal }
    }

    /// Runs a program to its end and collects its output.
    /// - Parameters:
    ///   - executable: A path (when it contains `/`) or a program name looked up on `PATH`.
    ///   - arguments: The arguments, without the program name.
    ///   - stdin: Text written to the program's stdin, which is then closed; `nil` gives it an empty stdin.
    ///   - environment: Variables set on top of this process's environment (a given value wins).
    ///   - currentDirectory: The working directory; `nil` keeps this process's.
    /// - Returns: The exit status and the output.
    /// - Throws: ``SubprocessError`` when the program is not found or cannot be started. A program that
    ///   runs and fails is not an error: look at ``Result/code``.
    public static func run(
        executable: String, arguments: [String] = [], stdin: String? = nil, environment: [String: String] = [:],
        currentDirectory: String? = nil
    ) throws -> Result {
        try run(
            executable: executable, arguments: arguments, input: stdin.map { Array($0.utf8) },
            environment: environment, currentDirectory: currentDirectory)
    }

    /// Runs a program to its end with bytes on its stdin and collects its output.
    /// - Parameters:
    ///   - executable: A path (when it contains `/`) or a program name looked up on `PATH`.
    ///   - arguments: The arguments, without the program name.
    ///   - stdin: Bytes written to the program's stdin, which is then closed.
    ///   - environment: Variables set on top of this process's environment (a given value wins).
    ///   - currentDirectory: The working directory; `nil` keeps this process's.
    /// - Returns: The exit status and the output.
    /// - Throws: ``SubprocessError`` when the program is not found or cannot be started.
    public static func run(
        executable: String, arguments: [String] = [], stdin: [UInt8], environment: [String: String] = [:],
        currentDirectory: String? = nil
    ) throws -> Result {
        try run(
            executable: executable, arguments: arguments, input: stdin, environment: environment,
            currentDirectory: currentDirectory)
    }

    /// The full path of a program on `PATH`.
    /// - Parameter name: The program name, for example `python3`.
    /// - Returns: The first executable file of that name on `PATH`, or `nil`.
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Resolves `executable` as ``run(executable:arguments:stdin:environment:currentDirectory:)`` does.
    /// - Parameter executable: A path or a program name.
    /// - Returns: The path to run.
    /// - Throws: ``SubprocessError`` when a bare name is not on `PATH`.
    public static func resolve(_ executable: String) throws -> String {
        if executable.contains("/") { return executable }
        guard let path = find(executable) else { throw SubprocessError("\(executable) not found on PATH") }
        return path
    }

    /// Starts `executable` (looked up on PATH) with `arguments`, `environment` on top of this
    /// process's, in `currentDirectory`; with `stdin: false` it reads `/dev/null`. SIGPIPE is ignored
    /// here, so a child that closes its input early cannot kill the test.
    static func spawn(
        executable: String, arguments: [String], environment: [String: String], currentDirectory: String?,
        stdin: Bool
    ) throws -> ChildProcess {
        let path = try resolve(executable)
        let merged =
            environment.isEmpty
            ? nil : ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        do {
            return try ChildProcess.spawn(
                [path] + arguments, environment: merged, directory: currentDirectory, stdin: stdin)
        } catch {
            throw SubprocessError("could not run \(path): \(error)")
        }
    }

    private static func run(
        executable: String, arguments: [String], input: [UInt8]?, environment: [String: String],
        currentDirectory: String?
    ) throws -> Result {
        let child = try spawn(
            executable: executable, arguments: arguments, environment: environment,
            currentDirectory: currentDirectory, stdin: input != nil)
        // stdin is written and stderr read on their own threads while this one reads stdout.
        let done = DispatchGroup()
        let errorBytes = Locked([UInt8]())
        background(done) {
            let bytes = PipeDrain.readAll(child, child.errors)
            errorBytes.withLock { $0 = bytes }
        }
        if let input {
            background(done) {
                // A child that exits without reading its input makes this fail (EPIPE): not an error here.
                _ = child.write(input)
                child.closeInput()
            }
        }
        let output = PipeDrain.readAll(child, child.output)
        done.wait()
        let (code, signalled) = child.waitForExit()
        return Result(
            code: code, terminatedBySignal: signalled, stdoutBytes: output, stderrBytes: errorBytes.withLock { $0 })
    }

    /// Runs `work` on a thread of its own (not the shared pools: it blocks on a pipe).
    private static func background(_ group: DispatchGroup, _ work: @escaping @Sendable () -> Void) {
        group.enter()
        let thread = Thread {
            work()
            group.leave()
        }
        thread.start()
    }
}
