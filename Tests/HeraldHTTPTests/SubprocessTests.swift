import Foundation
import HeraldHTTPTesting
import Testing

/// The one subprocess runner the test targets share.
@Suite("Subprocess")
struct SubprocessTests {
    @Test func collectsTheExitCodeStdoutAndStderrApart() throws {
        let r = try Subprocess.run(executable: "/bin/sh", arguments: ["-c", "printf out; printf err >&2; exit 3"])
        #expect(r.code == 3)
        #expect(!r.terminatedBySignal)
        #expect(!r.succeeded)
        #expect(r.stdout == "out")
        #expect(r.stderr == "err")
        let ok = try Subprocess.run(executable: "true")
        #expect(ok.succeeded)
        #expect(ok.stdoutBytes.isEmpty && ok.stderrBytes.isEmpty)
    }

    /// A child that fills stderr before it reads its stdin, then writes much to stdout: a runner that
    /// writes stdin, then reads stdout, then stderr (as the four copies this replaces did) waits forever.
    @Test(.timeLimit(.minutes(1))) func largeStdinStdoutAndStderrDoNotDeadlock() throws {
        let size = 1 << 20
        let script = """
            import sys
            sys.stderr.write("e" * \(size)); sys.stderr.flush()
            data = sys.stdin.buffer.read()
            sys.stdout.buffer.write(data[::-1]); sys.stdout.flush()
            """
        let input = (0..<size).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let r = try Subprocess.run(executable: "python3", arguments: ["-c", script], stdin: input)
        #expect(r.code == 0)
        #expect(r.stderrBytes.count == size)
        #expect(r.stdoutBytes == input.reversed())
    }

    @Test func textStdinEnvironmentAndWorkingDirectory() throws {
        let r = try Subprocess.run(
            executable: "/bin/sh",
            arguments: [
                "-c",
                #"read line; printf '%s|%s|%s|' "$line" "$HERALD_SUBPROCESS_TEST" "$(pwd)"; [ -n "$PATH" ] && printf path"#,
            ],
            stdin: "hello\n", environment: ["HERALD_SUBPROCESS_TEST": "set"], currentDirectory: "/")
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout == "hello|set|/|path", "the given variable is added to the inherited environment")
        let empty = try Subprocess.run(executable: "/bin/sh", arguments: ["-c", "cat; printf end"])
        #expect(empty.stdout == "end", "no stdin given is an empty stdin, not the runner's")
    }

    /// A child that exits without reading its input fails the write (EPIPE), not the test runner (SIGPIPE).
    @Test func aChildThatIgnoresItsInputDoesNotKillTheRunner() throws {
        let r = try Subprocess.run(executable: "true", stdin: [UInt8](repeating: 0x61, count: 4 << 20))
        #expect(r.succeeded)
    }

    @Test func signalsAndMissingProgramsAreReported() throws {
        let killed = try Subprocess.run(executable: "/bin/sh", arguments: ["-c", "kill -KILL $$"])
        #expect(killed.terminatedBySignal)
        #expect(killed.code == SIGKILL)
        #expect(throws: SubprocessError.self) {
            try Subprocess.run(executable: "herald-no-such-program-\(UUID().uuidString)")
        }
        #expect(throws: SubprocessError.self) { try Subprocess.run(executable: "/nonexistent/herald-program") }
        #expect(Subprocess.find("sh") != nil)
    }
}
