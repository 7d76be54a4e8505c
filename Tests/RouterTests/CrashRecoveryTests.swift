import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The crash test: `herald send` fans one notification out to 2,000 devices at a local FCM fake and
/// is killed with SIGKILL mid-way; a restarted `herald drain` completes it. Every device must have
/// received the notification, and any duplicate must carry the same idempotency key.
@Suite(.serialized, .stopsFakeHTTPServers) struct CrashRecoveryTests {
    static let devices = 2_000

    @Test func sigkillMidFanOutLosesNothing() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route(
            "/token", [.json(200, #"{"access_token":"ya29.crash-test","expires_in":3600,"token_type":"Bearer"}"#)])
        try await server.route(
            "/v1/projects/crash-test/messages:send",
            [
                FakeHTTPResponse(
                    status: 200, headers: ["content-type": "application/json"],
                    body: Array(#"{"name":"projects/crash-test/messages/1"}"#.utf8), delay: .milliseconds(5))
            ])

        let cli = try CLI(configText: "")
        let keyPath = cli.home + "/sa-key.pem"
        let gen = try Subprocess.run(
            executable: "openssl",
            arguments: ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        #expect(gen.code == 0, "\(gen.stderr)")
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        let serviceAccount: JSONValue = [
            "type": "service_account", "project_id": "crash-test", "private_key_id": "k1", "private_key": .string(pem),
            "client_email": "herald@crash-test.iam.gserviceaccount.com",
            "token_uri": .string(server.baseURL + "/token"),
        ]
        try serviceAccount.canonicalString.write(
            toFile: cli.home + "/service-account.json", atomically: true, encoding: .utf8)
        try """
        version: 1
        store: { path: ./herald.db }
        tls: { ca-file: \(server.caFile) }
        channels:
          fcm:
            type: fcm
            service-account: ./service-account.json
            endpoint: \(server.baseURL)
        routes:
          default:
            - deliver: [fcm]
        """.write(toFile: cli.config, atomically: true, encoding: .utf8)

        let lines = (0..<Self.devices).map { #"{"deviceId":"d\#($0)","platform":"phone","token":"tok-\#($0)"}"# }
        let reg = try cli.run(["devices", "register"], stdin: lines.joined(separator: "\n"))
        #expect(reg.code == 0, "\(reg.stderr)")

        // Start the fan-out and kill it with SIGKILL once part of it has reached the provider.
        let send = try cli.launch([
            "send", "-c", cli.config, "--json", #"{"id":"crash-1","title":"Deploy finished","body":"v1.2.3"}"#,
        ])
        var seen = 0
        for _ in 0..<600 {
            seen = try await server.requests().filter { $0.path.hasSuffix("messages:send") }.count
            if seen >= 300 || !send.isRunning { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        let killedMidWay = send.isRunning
        try await send.kill()
        #expect(killedMidWay, "the send finished before it could be killed (\(seen) requests seen)")

        let drain = try cli.run(["drain", "--until-empty", "--timeout", "120", "--format", "json"])
        #expect(drain.code == 0, "\(drain.stderr)")
        #expect(try JSONValue.parse(drain.stdout)["remaining"] == 0)

        var idsByToken: [String: Set<String>] = [:]
        var countByToken: [String: Int] = [:]
        for r in try await server.requests() where r.path.hasSuffix("messages:send") {
            let body = try JSONValue.parse(r.body)
            guard let token = body["message"]?["token"]?.stringValue,
                let id = body["message"]?["data"]?["heraldDeliveryId"]?.stringValue
            else {
                Issue.record("send without token or idempotency key")
                continue
            }
            idsByToken[token, default: []].insert(id)
            countByToken[token, default: 0] += 1
        }
        #expect(idsByToken.count == Self.devices, "every device received the notification")
        #expect(idsByToken.values.allSatisfy { $0.count == 1 }, "duplicates carry the same idempotency key")
        let duplicates = countByToken.values.filter { $0 > 1 }.count
        // The executor keeps 4 chunks of 125 in flight; what a kill leaves sent but unrecorded is resent.
        #expect(duplicates <= 500, "at most the in-flight chunks (4 x 125) are resent (\(duplicates))")
        let history = try cli.run(["history", "--format", "json", "--id", "crash-1"])
        let deliveries = try JSONValue.parse(history.stdout).arrayValue?.first?["deliveries"]?.arrayValue ?? []
        #expect(deliveries.count == Self.devices)
        #expect(deliveries.allSatisfy { $0["outcome"] == "delivered" })
    }
}
