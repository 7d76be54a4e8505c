import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting

/// A `herald` home whose `fcm` channel talks to a local fake FCM (HTTP/2 over TLS), with `devices`
/// phones registered (`d0…`, tokens `tok-0…`). Shared by the crash tests.
struct FCMFanOutFixture {
    let server: FakeHTTPServer
    let cli: CLI
    let devices: Int
    static let sendPath = "/v1/projects/crash-test/messages:send"

    /// Starts the fake, writes a service account with a fresh RSA key and the config, and registers
    /// the devices. `retry` is the channel's retry block, `store` the config's store block.
    static func make(
        devices: Int, retry: String = "{ attempts: 8, initial: 1s, max: 2s }", store: String = "{ path: ./herald.db }"
    ) async throws
        -> FCMFanOutFixture
    {
        let server = try await FakeHTTPServer.start()
        let cli = try CLI(configText: "")
        let keyPath = cli.home + "/sa-key.pem"
        let gen = try Subprocess.run(
            executable: "openssl",
            arguments: ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        guard gen.succeeded else { throw FakeHTTPServerError("openssl genpkey: \(gen.stderr)") }
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
        store: \(store)
        tls: { ca-file: \(server.caFile) }
        channels:
          fcm:
            type: fcm
            service-account: ./service-account.json
            endpoint: \(server.baseURL)
            retry: \(retry)
        routes:
          default:
            - deliver: [fcm]
        """.write(toFile: cli.config, atomically: true, encoding: .utf8)
        let lines = (0..<devices).map { #"{"deviceId":"d\#($0)","platform":"phone","token":"tok-\#($0)"}"# }
        let reg = try cli.run(["devices", "register"], stdin: lines.joined(separator: "\n"))
        guard reg.code == 0 else { throw FakeHTTPServerError("register failed: \(reg.stderr)") }
        return FCMFanOutFixture(server: server, cli: cli, devices: devices)
    }

    /// Routes the OAuth token endpoint and answers every send with `send` (the last one repeats).
    func answer(_ send: [FakeHTTPResponse]) async throws {
        try await server.route(
            "/token", [.json(200, #"{"access_token":"ya29.crash-test","expires_in":3600,"token_type":"Bearer"}"#)])
        try await server.route(Self.sendPath, send)
    }

    /// A 200 answer after `delay`.
    static func ok(delay: Duration = .milliseconds(2)) -> FakeHTTPResponse {
        FakeHTTPResponse(
            status: 200, headers: ["content-type": "application/json"],
            body: Array(#"{"name":"projects/crash-test/messages/1"}"#.utf8), delay: delay)
    }

    /// Starts `herald` with `args` in this home, not waiting for it.
    func spawn(_ args: [String]) throws -> RunningSubprocess { try cli.launch(args + ["-c", cli.config]) }

    /// The sends the fake received: token → the idempotency keys it carried, and the number of sends.
    func received() async throws -> (ids: [String: Set<String>], count: [String: Int]) {
        var ids: [String: Set<String>] = [:]
        var count: [String: Int] = [:]
        for r in try await server.requests() where r.path.hasSuffix("messages:send") {
            let body = try JSONValue.parse(r.body)
            let token = body["message"]?["token"]?.stringValue ?? "<none>"
            let id = body["message"]?["data"]?["heraldDeliveryId"]?.stringValue ?? "<none>"
            ids[token, default: []].insert(id)
            count[token, default: 0] += 1
        }
        return (ids, count)
    }
}
