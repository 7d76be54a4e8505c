import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

/// A real `herald serve` on 127.0.0.1 in a temporary HERALD_HOME, with API tokens made for the test.
final class ServeFixture: @unchecked Sendable {
    let home: String
    let port: Int
    let process: RunningSubprocess
    /// Token text by name (`ops`: read + devices, `hub`: send, `app`: events only).
    let tokens: [String: String]

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The `herald` built beside this test bundle (as RouterTests' CLI finds it).
    static var binary: String {
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() {
            let beside = bundle.appendingPathComponent("herald").path
            if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/herald").path
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// A free loopback port (bound and released; the server binds it right after).
    static func freePort() throws -> Int {
        let r = try Subprocess.run(
            executable: "python3",
            arguments: [
                "-c",
                "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1]); s.close()",
            ])
        guard let port = Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw SubprocessError("no free port: \(r.stderr)")
        }
        return port
    }

    /// Starts `herald serve` with `channelsAndRoutes` (YAML for `channels:` and `routes:`).
    init(channelsAndRoutes: String) throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("herald-console-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        port = try Self.freePort()
        var tokens: [String: String] = [:]
        for name in ["ops", "hub", "app"] { tokens[name] = "hrd_test_\(name)_" + UUID().uuidString }
        self.tokens = tokens
        func sha(_ name: String) -> String { Self.hex(SHA256.hash(Array((tokens[name] ?? "").utf8))) }
        let config = """
            version: 1
            store: { path: ./herald.db }
            server:
              listen: 127.0.0.1:\(port)
              tokens:
                - { name: ops, sha256: \(sha("ops")), namespaces: ["*"], scopes: [read, devices] }
                - { name: hub, sha256: \(sha("hub")), namespaces: ["default"], scopes: [send] }
                - { name: app, sha256: \(sha("app")), namespaces: ["default"], scopes: [events] }
            \(channelsAndRoutes)
            """
        try config.write(toFile: home + "/herald.yaml", atomically: true, encoding: .utf8)
        process = try Subprocess.launch(
            executable: Self.binary, arguments: ["serve", "-c", home + "/herald.yaml"],
            environment: ["HERALD_HOME": home], currentDirectory: home)
    }

    func stop() async throws {
        process.send(SIGTERM)
        _ = try await process.waitForExit(timeout: .seconds(10))
        try? FileManager.default.removeItem(atPath: home)
    }
}
