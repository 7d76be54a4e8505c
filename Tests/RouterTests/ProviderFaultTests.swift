import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The crash-and-fault suite's provider faults, end to end through the real `herald` binary: an FCM
/// endpoint that hangs, resets the connection mid-answer, fails TLS, or answers a 5xx storm with
/// `Retry-After` in seconds, as an HTTP-date, or absurdly large. Each `send` ends in bounded time
/// with a `retry` (these are transient), the right next attempt, and no device removed.
@Suite(.serialized) struct ProviderFaultTests {
    static let devices = 3
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts")

    /// A running `fault_server.py`.
    final class FaultServer: Sendable {
        let process: RunningSubprocess
        let port: Int
        let log: String
        /// Writing a mode here changes the server's mode for the next request.
        let modeFile: String

        init(mode: String, cert: String, key: String, directory: String) async throws {
            log = directory + "/requests-\(mode).log"
            modeFile = directory + "/mode-\(mode)"
            process = try Subprocess.launch(
                executable: "python3",
                arguments: [
                    scripts.appendingPathComponent("fault_server.py").path, "--mode", mode, "--cert", cert, "--key",
                    key,
                    "--log", log, "--mode-file", modeFile,
                ])
            let deadline = ContinuousClock.now + .seconds(20)
            while !process.stdout.contains("\n"), process.isRunning, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            guard let port = Int(process.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                process.send(SIGKILL)
                throw FakeHTTPServerError("fault_server.py did not print its port: \(process.stderr)")
            }
            self.port = port
        }

        var requests: [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func stop() { process.send(SIGKILL) }
    }

    /// A CA, a server certificate it signed for 127.0.0.1, and a self-signed impostor for the same
    /// address, made with the openssl command line.
    static func certificates(in dir: String) throws {
        let script = """
            set -e
            cd "$1"
            ec="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
            openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=fault-ca 2>/dev/null
            openssl req $ec -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 2>/dev/null
            printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext
            openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \\
              -extfile san.ext 2>/dev/null
            openssl req -x509 $ec -keyout rogue.key -out rogue.pem -days 2 -subj /CN=127.0.0.1 \\
              -addext subjectAltName=IP:127.0.0.1 2>/dev/null
            openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.pem 2>/dev/null
            """
        let made = try Subprocess.run(executable: "/bin/bash", arguments: ["-c", script, "certs", dir])
        guard made.succeeded else { throw FakeHTTPServerError("openssl failed: \(made.stderr)") }
    }

    /// A home whose `fcm` channel (1 s timeout) points at `port`, with three phones registered.
    static func home(port: Int, dir: String, store: String = "./herald.db") throws -> CLI {
        let cli = try CLI(configText: "")
        let pem = try String(contentsOfFile: dir + "/sa.pem", encoding: .utf8)
        let account: JSONValue = [
            "type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": .string(pem),
            "client_email": "herald@p.iam.gserviceaccount.com", "token_uri": .string("https://127.0.0.1:\(port)/token"),
        ]
        try account.canonicalString.write(toFile: cli.home + "/sa.json", atomically: true, encoding: .utf8)
        try """
        version: 1
        store: { path: \(store) }
        tls: { ca-file: \(dir)/ca.pem }
        channels:
          fcm:
            type: fcm
            service-account: ./sa.json
            endpoint: https://127.0.0.1:\(port)
            timeout: 1s
            retry: { attempts: 5, initial: 30s, max: 60s }
        routes:
          default:
            - deliver: [fcm]
        """.write(toFile: cli.config, atomically: true, encoding: .utf8)
        let lines = (0..<devices).map { #"{"deviceId":"d\#($0)","platform":"phone","token":"tok-\#($0)"}"# }
        let reg = try cli.run(["devices", "register"], stdin: lines.joined(separator: "\n"))
        guard reg.code == 0 else { throw FakeHTTPServerError("register: \(reg.stderr)") }
        return cli
    }

    struct Fault: Sendable, CustomTestStringConvertible {
        let mode: String
        /// The impostor certificate instead of the CA-signed one.
        let rogueTLS: Bool
        /// The next attempt must come this long after the send, within a second or two; nil: backoff.
        let retryAfter: TimeInterval?
        /// A word the reason must contain.
        let reason: String
        var testDescription: String { rogueTLS ? "TLS failure" : mode }
    }

    static let faults: [Fault] = [
        Fault(mode: "hang", rogueTLS: false, retryAfter: nil, reason: "time"),
        Fault(mode: "reset", rogueTLS: false, retryAfter: nil, reason: ""),
        Fault(mode: "ok", rogueTLS: true, retryAfter: nil, reason: ""),
        Fault(mode: "storm-seconds", rogueTLS: false, retryAfter: 2, reason: "503"),
        Fault(mode: "storm-date", rogueTLS: false, retryAfter: 3, reason: "503"),
        Fault(mode: "storm-huge", rogueTLS: false, retryAfter: 86_400, reason: "429"),
    ]

    @Test(arguments: faults) func aTransientFaultEndsInBoundedTimeAsARetry(fault: Fault) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fault-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.certificates(in: dir)
        let cert = dir + (fault.rogueTLS ? "/rogue.pem" : "/srv.pem")
        let key = dir + (fault.rogueTLS ? "/rogue.key" : "/srv.key")
        let server = try await FaultServer(mode: fault.mode, cert: cert, key: key, directory: dir)
        defer { server.stop() }
        let cli = try Self.home(port: server.port, dir: dir)

        let started = Date()
        let sent = try cli.run(["send", "--format", "json", "--json", #"{"id":"fault-1","title":"t","body":"b"}"#])
        let elapsed = Date().timeIntervalSince(started)
        #expect(sent.code == 0, "\(sent.stderr)")
        // Bounded: every delivery below ends as `retry` with the fault's reason (a hang by its
        // timeout), so the send did not wait for the hanging provider; no duration is asserted.
        let deliveries = try #require(try JSONValue.parse(sent.stdout)["deliveries"]?.arrayValue)
        #expect(deliveries.count == Self.devices)
        for d in deliveries {
            #expect(d["outcome"] == "retry", "\(d)")
            let reason = d["reason"]?.stringValue ?? ""
            #expect(fault.reason.isEmpty || reason.lowercased().contains(fault.reason), "\(reason)")
            let next = try #require(d["nextAttemptAt"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) })
            if let after = fault.retryAfter {
                // Retry-After is honoured (up to Herald's one-day ceiling), whole seconds either side.
                #expect(abs(next.timeIntervalSince(started) - after) < elapsed + 2, "next attempt \(next)")
            } else {
                // The channel's own backoff: 30 s scaled by 50–100 %.
                #expect(next.timeIntervalSince(started) >= 14 && next.timeIntervalSince(started) <= 60 + elapsed)
            }
        }
        // A transient error removes no device.
        let list = try cli.run(["devices", "list", "--format", "json"])
        #expect(try JSONValue.parse(list.stdout).arrayValue?.count == Self.devices)
        if !fault.rogueTLS {
            #expect(server.requests.contains { $0.contains("messages:send") }, "the fault server saw no send")
        } else {
            #expect(!server.requests.contains { $0.contains("messages:send") }, "a send passed the TLS check")
        }
    }
}
