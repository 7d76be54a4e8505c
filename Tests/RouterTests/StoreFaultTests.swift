import ChannelAPI
import Foundation
import HeraldHTTPTesting
import Testing

/// The crash-and-fault suite's store faults, through the real `herald` binary: a full disk (a small
/// tmpfs, so root only) and a database locked by another process. Each ends in a clear error that
/// names the file, in bounded time; nothing already accepted is lost, and delivery resumes once the
/// fault is gone.
@Suite(.serialized) struct StoreFaultTests {
    typealias Fault = ProviderFaultTests

    /// Mounts a tmpfs of `size` at a new directory; nil when this process may not mount.
    static func mountTmpfs(size: String) -> String? {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tmpfs-\(UUID().uuidString)")
            .path
        guard (try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)) != nil,
            shell("mount -t tmpfs -o size=\(size) tmpfs '\(dir)'") == 0
        else { return nil }
        return dir
    }

    @discardableResult
    static func shell(_ command: String) -> Int32 {
        (try? Subprocess.run(executable: "/bin/sh", arguments: ["-c", command]))?.code ?? -1
    }

    static let canMount: Bool = {
        guard getuid() == 0, let dir = mountTmpfs(size: "64k") else { return false }
        shell("umount '\(dir)'")
        return true
    }()

    @Test(.enabled(if: canMount, "needs root to mount a tmpfs (CI runs as root)"))
    func aFullDiskRefusesClearlyLosesNothingAndResumes() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-full-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let disk = try #require(Self.mountTmpfs(size: "2m"))
        defer {
            Self.shell("umount '\(disk)'")
            try? FileManager.default.removeItem(atPath: disk)
        }
        try Fault.certificates(in: dir)
        let server = try await Fault.FaultServer(
            mode: "storm-seconds", cert: dir + "/srv.pem", key: dir + "/srv.key", directory: dir)
        defer { server.stop() }
        let store = disk + "/herald.db"
        let cli = try Fault.home(port: server.port, dir: dir, store: store)

        // Accepted while the provider is busy: queued for a retry in 2 s.
        let first = try cli.run(["send", "--json", #"{"id":"accepted","title":"t","body":"b"}"#])
        #expect(first.code == 0, "\(first.stderr)")
        // Fill the disk (dd stops at ENOSPC).
        Self.shell("dd if=/dev/zero of='\(disk)/filler' bs=64k 2>/dev/null")

        let refused = try cli.run(["send", "--json", #"{"id":"refused","title":"t","body":"b"}"#])
        #expect(refused.code == 1, "exit \(refused.code): \(refused.stderr)")
        #expect(refused.stderr.contains(store), "the error names the store: \(refused.stderr)")
        #expect(
            refused.stderr.contains("no space left on the device"), "the error says the disk is full: \(refused.stderr)"
        )

        // The provider is healthy again, the disk still full: a drain must not send what it cannot record.
        try "ok".write(toFile: server.modeFile, atomically: true, encoding: .utf8)
        try await Task.sleep(for: .seconds(2.5))
        let sendsBefore = server.requests.filter { $0.contains("messages:send") }.count
        let blocked = try cli.run(["drain"])
        #expect(blocked.code == 1, "exit \(blocked.code): \(blocked.stderr)")
        #expect(blocked.stderr.contains(store), "\(blocked.stderr)")
        #expect(server.requests.filter { $0.contains("messages:send") }.count == sendsBefore, "sent while unrecordable")

        // Space is back: the accepted notification is delivered to every device.
        try FileManager.default.removeItem(atPath: disk + "/filler")
        let drain = try cli.run(["drain", "--until-empty", "--timeout", "30", "--format", "json"])
        #expect(drain.code == 0, "\(drain.stderr)")
        let history = try cli.run(["history", "--format", "json", "--id", "accepted"])
        let deliveries = try JSONValue.parse(history.stdout).arrayValue?.first?["deliveries"]?.arrayValue ?? []
        #expect(deliveries.count == Fault.devices)
        #expect(deliveries.allSatisfy { $0["outcome"] == "delivered" }, "\(deliveries)")
        let refusedHistory = try cli.run(["history", "--format", "json", "--id", "refused"])
        #expect(try JSONValue.parse(refusedHistory.stdout).arrayValue?.isEmpty == true, "a refused send left rows")
    }

    @Test func aDatabaseLockedByAnotherProcessIsAClearErrorNotAHang() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-lock-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Fault.certificates(in: dir)
        let server = try await Fault.FaultServer(
            mode: "ok", cert: dir + "/srv.pem", key: dir + "/srv.key", directory: dir)
        defer { server.stop() }
        let cli = try Fault.home(port: server.port, dir: dir)
        let store = cli.home + "/herald.db"

        // Another process takes the write lock and keeps it.
        let holder = try Subprocess.launch(
            executable: "python3",
            arguments: [
                "-c",
                "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                    + "c.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\ntime.sleep(60)",
                store,
            ])
        defer { holder.send(SIGKILL) }
        let deadline = ContinuousClock.now + .seconds(20)
        while !holder.stdout.contains("locked"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(holder.stdout.contains("locked"), "the other process did not take the lock: \(holder.stderr)")

        // No duration: the holder keeps the lock for 60 s, so a send that failed naming the lock
        // (below) gave up after the busy timeout instead of waiting it out.
        let sent = try cli.run(["send", "--json", #"{"id":"locked-1","title":"t","body":"b"}"#])
        #expect(sent.code == 1, "exit \(sent.code): \(sent.stderr)")
        #expect(sent.stderr.contains(store), "the error names the store: \(sent.stderr)")
        #expect(sent.stderr.lowercased().contains("locked"), "\(sent.stderr)")
        #expect(!server.requests.contains { $0.contains("messages:send") }, "sent although nothing could be stored")

        // Once the other process lets go, the same send goes through.
        try await holder.kill()
        let again = try cli.run(["send", "--format", "json", "--json", #"{"id":"locked-1","title":"t","body":"b"}"#])
        #expect(again.code == 0, "\(again.stderr)")
        let deliveries = try JSONValue.parse(again.stdout)["deliveries"]?.arrayValue ?? []
        #expect(deliveries.count == Fault.devices && deliveries.allSatisfy { $0["outcome"] == "delivered" })
    }
}
