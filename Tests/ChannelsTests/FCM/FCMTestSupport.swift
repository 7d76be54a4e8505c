import ChannelAPI
import FCMChannel
import Foundation
import HeraldHTTPTesting
import HeraldYAML
import Router
import RouterTesting
import Testing

struct FCMFixtureError: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// Fixtures for the FCM suites: an RSA key made by `openssl` at test time, service-account files,
/// helper scripts.
enum FCMFixture {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    static let email = "herald-test@demo-project.iam.gserviceaccount.com"
    static let keyId = "0123456789abcdef0123456789abcdef01234567"

    /// One 2048-bit key per test run (generation is slow-ish), PKCS#8 PEM.
    static let keyPEM: Result<String, FCMFixtureError> = {
        let dir = temporaryDirectory()
        let path = dir.appendingPathComponent("key.pem").path
        let r = run("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path])
        guard r.code == 0, let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
            return .failure(FCMFixtureError("openssl genpkey failed: \(r.stderr)"))
        }
        return .success(pem)
    }()

    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fcm-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The service-account JSON Google hands out, pointing its token_uri where the test wants.
    static func serviceAccountJSON(tokenURI: String, projectId: String = "demo-project", keyId: String? = keyId)
        throws -> JSONValue
    {
        var o: [String: JSONValue] = [
            "type": "service_account", "project_id": .string(projectId), "private_key": .string(try keyPEM.get()),
            "client_email": .string(email), "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(tokenURI),
        ]
        if let keyId { o["private_key_id"] = .string(keyId) }
        return .object(o)
    }

    /// Writes a service-account file and returns its path.
    static func writeServiceAccount(_ json: JSONValue, in dir: URL = temporaryDirectory()) throws -> String {
        let path = dir.appendingPathComponent("service-account.json").path
        try Data(json.canonicalBytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    typealias Run = Subprocess.Result

    /// Runs a program, collecting its output; a program that cannot be started gives code -1.
    static func run(_ executable: String, _ arguments: [String], stdin: String? = nil) -> Run {
        do {
            return try Subprocess.run(executable: executable, arguments: arguments, stdin: stdin)
        } catch {
            return Run(code: -1, stdoutBytes: [], stderrBytes: Array("\(error)".utf8))
        }
    }

    /// Runs one of `Tests/ChannelsTests/Scripts/*.py` with python3 from PATH.
    static func python(_ script: String, _ arguments: [String], stdin: String? = nil) -> Run {
        let path = testsDirectory.appendingPathComponent("Scripts").appendingPathComponent(script).path
        return run("python3", [path] + arguments, stdin: stdin)
    }

    /// A channel config parsed from YAML, as the router hands it to the factory.
    static func config(_ yaml: String, file: String = "herald.yaml") throws -> ChannelConfig {
        guard let node = try YAMLParser.parse(yaml) else { throw FCMFixtureError("empty YAML") }
        let cn = ConfigNode(yaml: node, file: file, environment: [:], baseDirectory: "/tmp")
        return try ChannelConfig(name: "fcm", node: cn, ignoring: ["type"])
    }

    static func token(_ value: String, expiresIn: Int = 3600) -> ScriptedResponse {
        .json(200, #"{"access_token":"\#(value)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#)
    }

    static func phone(_ id: String, token: String? = nil, platform: String = "phone", pushKey: String? = nil) -> Device
    {
        var f: [String: JSONValue] = ["token": .string(token ?? "fcm-token-\(id)-\(String(repeating: "x", count: 40))")]
        if let pushKey { f["pushKey"] = .string(pushKey) }
        return Device(deviceId: id, platform: platform, fields: f)
    }
}

/// A scripted fake FCM (token endpoint at `/token`, send endpoint under `/v1/projects/`) and a channel
/// built through the real factory against it.
final class FCMHarness: Sendable {
    let http: ScriptedTransport
    let clock: ManualClock
    let state: InMemoryChannelState
    let sink: RecordingLogSink
    let accountPath: String
    let channel: FCMChannel

    static let baseURL = "https://fcm.test"
    static let sendPath = "/v1/projects/demo-project/messages:send"
    static let accessToken = "ya29.test-access-token-AAAAAAAAAAAAAAAAAAAA"

    init(
        http: ScriptedTransport, clock: ManualClock, state: InMemoryChannelState, sink: RecordingLogSink,
        accountPath: String, channel: FCMChannel
    ) {
        self.http = http
        self.clock = clock
        self.state = state
        self.sink = sink
        self.accountPath = accountPath
        self.channel = channel
    }

    static func start(
        extraYAML: String = "", tokens: [ScriptedResponse] = [FCMFixture.token(accessToken)],
        send: [ScriptedResponse] = [.json(200, #"{"name":"projects/demo-project/messages/0:1"}"#)],
        state: InMemoryChannelState = InMemoryChannelState()
    ) throws -> FCMHarness {
        let http = ScriptedTransport()
        http.route("/token", method: "POST", tokens)
        http.route("/v1/projects/", method: "POST", send)
        let path = try FCMFixture.writeServiceAccount(FCMFixture.serviceAccountJSON(tokenURI: baseURL + "/token"))
        let clock = ManualClock()
        let sink = RecordingLogSink()
        let context = ChannelContext(
            name: "fcm", http: http, clock: clock, random: FixedRandom(),
            logger: ChannelLogger(source: "fcm", sink: sink, clock: clock), state: state)
        let yaml = """
            type: fcm
            service-account: \(path)
            endpoint: \(baseURL)
            \(extraYAML)
            """
        let config = try FCMFixture.config(yaml)
        let made = try FCMChannel.factory.make(config, context)
        try config.finish()
        let channel = try #require(made as? FCMChannel, "factory did not make an FCMChannel")
        return FCMHarness(http: http, clock: clock, state: state, sink: sink, accountPath: path, channel: channel)
    }

    /// Another channel on the same transport and account (a second `herald` process).
    func sibling(state: InMemoryChannelState) throws -> FCMChannel {
        let context = ChannelContext(
            name: "fcm", http: http, clock: clock, random: FixedRandom(),
            logger: ChannelLogger(source: "fcm", sink: sink, clock: clock), state: state)
        return FCMChannel(
            account: try FCMServiceAccount.load(path: accountPath), endpoint: Self.baseURL, context: context)
    }

    func deliver(_ n: HeraldNotification, _ devices: [Device]) async -> [DeliveryResult] {
        await channel.deliver(
            DeliveryRequest(
                notification: n, targets: devices.map { DeliveryTarget(device: $0, deliveryId: "dlv-\($0.deviceId)") }))
    }

    /// The requests sent to the send endpoint, in order.
    func sends() -> [HTTPRequest] { http.requests.filter { $0.path == FCMHarness.sendPath } }
    /// The requests sent to the token endpoint, in order.
    func tokenRequests() -> [HTTPRequest] { http.requests.filter { $0.path == "/token" } }
}

extension HTTPRequest {
    /// The body as JSON.
    var json: JSONValue? { try? JSONValue.parse(body) }

    /// A form-encoded body's fields.
    var formFields: [String: String] {
        var out: [String: String] = [:]
        for pair in bodyText.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if kv.count == 2 { out[kv[0]] = kv[1] }
        }
        return out
    }
}

extension HeraldNotification {
    static func sample(
        ttl: Int? = 3600, priority: Priority? = .high, android: [String: JSONValue] = [:], data: [String: String]? = nil
    ) -> HeraldNotification {
        HeraldNotification(
            id: "n-1", type: "permission-request", title: "Permission Request", body: "Claude Bash: rm -rf build",
            severity: .warning, url: "/sessions/5f0c",
            data: data ?? ["sessionId": "5f0c", "sessionName": "claude - hapi", "requestId": "r-17", "extra": "yes"],
            ttl: ttl, priority: priority, android: android)
    }
}
