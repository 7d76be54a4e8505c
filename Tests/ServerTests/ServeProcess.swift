import Foundation
import HeraldHTTPTesting
import HeraldServer

/// The real `herald serve` binary in a temporary home, for tests that drive it from another
/// program (the Python hub example, the Pulse site kit and a browser).
final class ServeProcess: @unchecked Sendable {
    // Mutated only by the test that owns it, one step at a time.
    let home: String
    let configPath: String
    private(set) var process: RunningSubprocess?
    private(set) var port = 0

    /// The `herald` built beside this test bundle, else `.build/debug/herald`.
    static var binary: String {
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() {
            let beside = bundle.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        }
        return repositoryRoot + "/.build/debug/herald"
    }

    /// The repository's root folder.
    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    /// A token and its `server.tokens` entry with every scope over `namespaces`.
    static func token(name: String, namespaces: [String], scopes: [String]) -> (token: String, yaml: String) {
        let token = "hrd_test-\(name)-\(UUID().uuidString)"
        let list = { (items: [String]) in "[" + items.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
        let yaml = """
                - name: \(name)
                  sha256: \(TokenAuthenticator.sha256Hex(of: token))
                  namespaces: \(list(namespaces))
                  scopes: \(list(scopes))
            """
        return (token, yaml)
    }

    /// Writes `config(home, listen)` (a YAML text; `listen` is `127.0.0.1:0` until a port is known).
    init(config: @escaping (_ home: String, _ listen: String) -> String) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        configPath = home + "/herald.yaml"
        self.config = config
    }

    private let config: (String, String) -> String

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts the server (on the port it had before, after a restart) and waits until it listens.
    func start() async throws {
        let listen = "127.0.0.1:\(port)"
        try config(home, listen).write(toFile: configPath, atomically: true, encoding: .utf8)
        let p = try Subprocess.launch(
            executable: ServeProcess.binary, arguments: ["serve", "-c", configPath],
            environment: ["HERALD_HOME": home])
        process = p
        let stderr = try await p.waitForStderr("serving on")
        guard let range = stderr.range(of: #"serving on http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression),
            let n = Int(stderr[range].split(separator: ":").last ?? "")
        else {
            _ = try? await p.kill()
            throw SubprocessError("herald serve did not start: \(stderr)")
        }
        port = n
    }

    /// SIGTERM, then the exit (a `herald serve` that ends cleanly exits 0).
    @discardableResult
    func stop() async throws -> Subprocess.Result? {
        guard let p = process else { return nil }
        process = nil
        p.send(SIGTERM)
        if let result = try await p.waitForExit(timeout: .seconds(20)) { return result }
        return try await p.kill()
    }

    /// Stops the server if it runs and removes the home.
    func cleanUp() async {
        _ = try? await stop()
        try? FileManager.default.removeItem(atPath: home)
    }
}
