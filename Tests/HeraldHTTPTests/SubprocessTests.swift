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
    @Test(.timeLimit(.minutes(5))) func largeStdinStdoutAndStderrDoNotDeadlock() throws {
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
        let terminated = try Subprocess.run(executable: "/bin/sh", arguments: ["-c", "kill -TERM $$; sleep 5"])
        #expect(terminated.terminatedBySignal)
        #expect(terminated.code == SIGTERM)
        #expect(throws: SubprocessError.self) {
            try Subprocess.run(executable: "herald-no-such-program-\(UUID().uuidString)")
        }
        #expect(throws: SubprocessError.self) { try Subprocess.run(executable: "/nonexistent/herald-program") }
        #expect(Subprocess.find("sh") != nil)
    }

    /// A child starts with no signal blocked, as from a shell, although tests run on pool threads that
    /// block nearly all of them (a `herald run` started by a test must see SIGHUP and SIGTERM as in use).
    @Test func aChildStartsWithNoSignalBlocked() async throws {
        let script = "import signal; print(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))"
        let r = try Subprocess.run(executable: "python3", arguments: ["-c", script])
        #expect(r.stdout == "[]\n", "\(r.stderr)")
        let launched = try Subprocess.launch(executable: "python3", arguments: ["-c", script])
        let exit = try #require(try await launched.waitForExit())
        #expect(exit.stdout == "[]\n", "\(exit.stderr)")
    }

    /// A launched program is watched (stderr so far), signalled, waited for, killed, and killed when released.
    @Test func aLaunchedProgramIsWatchedSignalledAndKilled() async throws {
        let shell = try Subprocess.launch(
            executable: "/bin/sh",
            arguments: [
                "-c", "trap 'echo got-hup >&2; exit 7' HUP; echo out; echo ready >&2; while :; do sleep 0.05; done",
            ])
        #expect(try await shell.waitForStderr("ready").contains("ready"))
        #expect(shell.isRunning)
        shell.send(SIGHUP)
        let ended = try #require(try await shell.waitForExit())
        #expect(ended.code == 7 && !ended.terminatedBySignal)
        #expect(ended.stdout == "out\n")
        #expect(ended.stderr == "ready\ngot-hup\n")

        let sleeper = try Subprocess.launch(executable: "sleep", arguments: ["30"])
        #expect(try await sleeper.waitForExit(timeout: .milliseconds(200)) == nil, "still running")
        let killed = try await sleeper.kill()
        #expect(killed.terminatedBySignal && killed.code == SIGKILL)

        var released: RunningSubprocess? = try Subprocess.launch(executable: "sleep", arguments: ["30"])
        let pid = try #require(released?.processIdentifier)
        #expect(kill(pid, 0) == 0)
        released = nil
        #expect(kill(pid, 0) == -1, "the released handle killed and reaped its program")
    }

    /// Many programs launched and torn down at once, some released while still running: each one's
    /// output is collected whole and apart. Output was read through `FileHandle.readabilityHandler`,
    /// whose concurrent teardown crashes libdispatch on Linux (SIGSEGV in a clean-clone CI run). The
    /// shell `exec`s its sleep: a grandchild holding the pipes keeps Foundation's `Process` reporting
    /// the program as running.
    @Test(.timeLimit(.minutes(3))) func manyProgramsLaunchedAndReleasedAtOnceKeepTheirOutputApart() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            // 16 at once: 48 starved the other suites under ThreadSanitizer (their servers' first
            // request took over 20 s), and sleeps of 30 s ran out before the kill came.
            for i in 0..<16 {
                group.addTask {
                    let program = try Subprocess.launch(
                        executable: "/bin/sh",
                        arguments: ["-c", "printf 'out-\(i)'; printf 'err-\(i)' >&2; exec sleep 600"])
                    _ = try await program.waitForStderr("err-\(i)", timeout: .seconds(20))
                    // stdout has a reader thread of its own: it may come in after stderr.
                    let deadline = ContinuousClock.now + .seconds(20)
                    while program.stdout.isEmpty && ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    if i.isMultiple(of: 2) {
                        let result = try await program.kill()
                        #expect(result.stdout == "out-\(i)")
                        #expect(result.stderr == "err-\(i)")
                        #expect(result.terminatedBySignal)
                    } else {
                        #expect(program.stdout == "out-\(i)")
                    }
                    // The odd ones are released while running: their deinit kills them.
                }
            }
            try await group.waitForAll()
        }
    }
}
