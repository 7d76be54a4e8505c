import Foundation
import HeraldHTTPTesting
import HeraldPostgres
import HeraldSync

/// A real PostgreSQL server for tests, started once per test process from the Debian
/// `postgresql` package: `initdb` in a temporary directory, the Unix socket in that directory,
/// a random TCP port on 127.0.0.1, `fsync=off`. Each test gets a fresh database
/// (``createDatabase()``). The server stops when the test process exits (and, should the process
/// be killed, a watchdog stops it within a second).
///
/// Running as root (CI), the server runs as the `postgres` user (or `nobody`), which owns the
/// data directory: PostgreSQL refuses to run as root. When the server binaries are missing this
/// fails with a message naming the package (`make deps` installs it); it never skips silently.
public final class TestPostgres: Sendable {
    /// Why the server could not be started or used.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The directory holding the data directory, the socket and the log.
    public let directory: String
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The role tests connect as (a superuser, trust authentication).
    public let user = "herald"
    private let binDirectory: String
    private let runAs: String?
    private let server = Locked<RunningSubprocess?>(nil)
    private let watchdogs = Locked<[RunningSubprocess]>([])

    private static let shared = Locked<Result<TestPostgres, Failure>?>(nil)

    /// The server of this test process, started on first use.
    public static func start() throws -> TestPostgres {
        try shared.withLock { state -> Result<TestPostgres, Failure> in
            if let state { return state }
            let made: Result<TestPostgres, Failure>
            do { made = .success(try TestPostgres()) } catch let f as Failure { made = .failure(f) } catch {
                made = .failure(Failure(description: "\(error)"))
            }
            state = made
            return made
        }.get()
    }

    /// A server of its own (not the shared one), for a test that stops and restarts it while
    /// other tests use the shared server. Call ``shutDown()`` when done.
    public static func startSeparate() throws -> TestPostgres { try TestPostgres() }

    /// Stops a separate server for good and removes its directory.
    public func shutDown() async {
        try? await stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private init() throws {
        guard let bin = Self.findBinaries() else {
            throw Failure(
                description: "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found under "
                    + "/usr/lib/postgresql/*/bin: install the Debian package `postgresql` (make deps does)")
        }
        binDirectory = bin
        runAs = getuid() == 0 ? Self.unprivilegedUser() : nil
        let template = NSTemporaryDirectory() + "herald-pg-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard let made = mkdtemp(&bytes) else { throw Failure(description: "mkdtemp failed: errno \(errno)") }
        directory = String(cString: made)
        port = Self.freePort()
        if let runAs {
            chmod(directory, 0o755)
            try run("/bin/chown", ["-R", "\(runAs):", directory], as: nil, "chown the data directory")
        }
        try run(
            bin + "/initdb",
            [
                "-D", directory + "/data", "-U", user, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync",
                "--no-instructions",
            ], as: runAs, "initdb")
        try startServer()
        atexit { TestPostgres.stopSharedAtExit() }
    }

    /// A URL of a new, empty database (`CREATE DATABASE … TEMPLATE template0`).
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let admin = try PostgresDatabase(url: url(database: "postgres"), maximumConnections: 1)
        defer { admin.close() }
        // The name is generated here (hex only), so it is safe as an identifier.
        try admin.execute("CREATE DATABASE \(name) TEMPLATE template0")
        return url(database: String(name))
    }

    /// The URL of `database` on this server (TCP, 127.0.0.1).
    public func url(database: String) -> String { "postgresql://\(user)@127.0.0.1:\(port)/\(database)" }

    /// Stops the server (fast shutdown: connections are closed), as if the database went away.
    public func stop() async throws {
        guard let running = server.withLock({ $0 }) else { return }
        running.send(SIGINT)
        _ = try await running.waitForExit(timeout: .seconds(30))
        server.withLock { $0 = nil }
    }

    /// Starts the server again after ``stop()``, on the same port and data.
    public func restart() throws { try startServer() }

    /// Starts `postgres` itself (no `pg_ctl`, whose daemon would hold the output pipes), as the
    /// unprivileged user through `setpriv` so that its pid is the server's, and waits until it
    /// accepts connections. A watchdog shell stops it once this process is gone (even if killed).
    private func startServer() throws {
        var arguments = [
            binDirectory + "/postgres", "-D", directory + "/data", "-p", String(port), "-k", directory,
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off", "-c", "max_connections=200",
        ]
        if let runAs, let pw = getpwnam(runAs) {
            arguments =
                [
                    "--reuid=\(pw.pointee.pw_uid)", "--regid=\(pw.pointee.pw_gid)", "--init-groups", "--",
                ] + arguments
        }
        let executable = runAs == nil ? arguments.removeFirst() : "/usr/bin/setpriv"
        let running = try Subprocess.launch(executable: executable, arguments: arguments, currentDirectory: directory)
        server.withLock { $0 = running }
        let script =
            "while kill -0 \(getpid()) 2>/dev/null && kill -0 \(running.processIdentifier) 2>/dev/null; do sleep 1; done; "
            + "kill -INT \(running.processIdentifier) 2>/dev/null"
        if let dog = try? Subprocess.launch(executable: "/bin/sh", arguments: ["-c", script]) {
            watchdogs.withLock { $0.append(dog) }
        }
        let deadline = Date().addingTimeInterval(30)
        while true {
            if let db = try? PostgresDatabase(url: url(database: "postgres"), maximumConnections: 1) {
                db.close()
                return
            }
            guard running.isRunning, Date() < deadline else {
                throw Failure(description: "postgres did not start: \(running.stderr.suffix(2000))")
            }
            usleep(50_000)
        }
    }

    private static func stopSharedAtExit() {
        guard let instance = try? shared.withLock({ $0 })?.get() else { return }
        instance.server.withLock { $0 }?.send(SIGQUIT)
        usleep(200_000)
        _ = try? FileManager.default.removeItem(atPath: instance.directory)
    }

    private func run(_ executable: String, _ arguments: [String], as user: String?, _ what: String) throws {
        let result: Subprocess.Result
        if let user {
            result = try Subprocess.run(
                executable: "/usr/sbin/runuser", arguments: ["-u", user, "--", executable] + arguments,
                currentDirectory: directory)
        } else {
            result = try Subprocess.run(executable: executable, arguments: arguments, currentDirectory: directory)
        }
        guard result.succeeded else {
            throw Failure(description: "\(what) failed (\(result.code)): \(result.stderr)\(result.stdout)")
        }
    }

    private static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }
        for v in versions.sorted(by: >) {
            let bin = "\(root)/\(v)/bin"
            if ["initdb", "pg_ctl", "postgres"].allSatisfy({
                FileManager.default.isExecutableFile(atPath: "\(bin)/\($0)")
            }) {
                return bin
            }
        }
        return nil
    }

    private static func unprivilegedUser() -> String {
        if getpwnam("postgres") != nil { return "postgres" }
        return "nobody"
    }

    /// A port the kernel just handed out for 127.0.0.1 (closed again; PostgreSQL binds it next).
    private static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        return port == 0 ? 54_329 : port
    }
}
