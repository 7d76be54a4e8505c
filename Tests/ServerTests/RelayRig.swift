import ChannelAPI
import ChannelSupport
import Foundation
import HeraldChannels
import HeraldCrypto
import HeraldHTTPTesting
import HeraldServer
import Router
import RouterTesting

/// Two Heralds and a fake Apple: the relay (B: `herald serve` with `server.relays` and an `apns`
/// channel pointed at a loopback HTTP/2 fake APNs) and, when asked, a hub (A: a router whose `relay`
/// channels, hapi and openchamber, point at B).
struct RelayRig {
    let apns: FakeHTTPServer
    let relay: Router
    let server: HeraldServer
    let relayLog: RecordingLogSink
    let hub: Router?
    let home: String
    /// `https` when B terminates TLS itself (`tls: true`), else `http`.
    var scheme = "http"

    /// B's base URL.
    var base: String { "\(scheme)://127.0.0.1:\(server.port)" }

    /// A hex APNs device token.
    static let token = String(repeating: "ab12", count: 16)
    /// A hapi pushKey (32 bytes).
    static let pushKey = Array(UInt8(1)...UInt8(32))
    /// The bearer token with scope relay, and one without.
    static let relayToken = "hrd_relay-token"
    static let readToken = "hrd_read-token"

    /// `relays` is the YAML under `server.relays` (indented by four spaces).
    /// `store` replaces the relay's SQLite store (`store: { url: … }` for PostgreSQL).
    /// `fcm` adds an `fcm` channel to B whose OAuth and send endpoints are the same fake server
    /// (``fcmSendPath``, `/token`). `tls` has B terminate TLS with a fresh self-signed certificate
    /// the hub trusts (Home Assistant devices need an https `pushUrl`).
    static func start(
        apns: FakeHTTPServer, relays: String, withHub: Bool = true, store: String? = nil, fcm: Bool = false,
        tls: Bool = false
    ) async throws -> RelayRig {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("herald-relay-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let text = try relayConfig(home: home, apns: apns, relays: relays, store: store, fcm: fcm, tls: tls)
        let config = try ConfigLoader.parse(text, registry: HeraldChannels.registry)
        var serverConfig = try ServerConfig(config)
        serverConfig.port = 0
        let log = RecordingLogSink()
        let relay = try await Router(
            config: config, registry: HeraldChannels.registry, options: RouterOptions(logSink: log))
        let server = try HeraldServer(router: relay, server: serverConfig)
        var hub: Router?
        if withHub {
            let hubText = """
                version: 1
                store: { path: \(home)/hub.db }
                \(tls ? "tls: { ca-file: \(home)/tls-cert.pem }\n" : "")
                channels:
                  hapi: { type: relay, protocol: hapi, url: "http://127.0.0.1:\(server.port)" }
                  oc: { type: relay, protocol: openchamber, url: "http://127.0.0.1:\(server.port)/v1/push/send" }
                  ha: { type: relay, protocol: home-assistant, allow-hosts: ["127.0.0.1"] }
                  has: { type: relay, protocol: home-assistant, encryption: secretbox, allow-hosts: ["127.0.0.1"] }
                routes:
                  default: []
                  namespaces:
                    hapi:
                      - deliver: [hapi]
                    oc:
                      - deliver: [oc]
                    ha:
                      - deliver: [ha]
                    has:
                      - deliver: [has]
                """
            let hubConfig = try ConfigLoader.parse(hubText, registry: HeraldChannels.registry)
            hub = try await Router(
                config: hubConfig, registry: HeraldChannels.registry,
                options: RouterOptions(logSink: RecordingLogSink()))
        }
        return RelayRig(
            apns: apns, relay: relay, server: server, relayLog: log, hub: hub, home: home,
            scheme: tls ? "https" : "http")
    }

    func stop() async {
        await server.stop(grace: .seconds(2))
        await relay.shutdown()
        await hub?.shutdown()
        try? FileManager.default.removeItem(atPath: home)
    }

    /// Writes a self-signed certificate for 127.0.0.1 (`tls-cert.pem`, `tls-key.pem`) into `home`; the
    /// certificate's path.
    static func selfSigned(_ home: String) throws -> String {
        let r = try Subprocess.run(
            executable: "openssl",
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", home + "/tls-key.pem",
                "-out", home + "/tls-cert.pem",
            ])
        guard r.succeeded else { throw FakeHTTPServerError("openssl req: \(r.stderr)") }
        return home + "/tls-cert.pem"
    }

    /// The fake FCM's send path (project `relay-test`).
    static let fcmSendPath = "/v1/projects/relay-test/messages:send"

    /// Writes a service account (a fresh RSA key, `token_uri` on the fake) into `home`; its path.
    static func fcmAccount(_ home: String, _ fake: FakeHTTPServer) throws -> String {
        let keyPath = home + "/sa-key.pem"
        let gen = try Subprocess.run(
            executable: "openssl",
            arguments: ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        guard gen.succeeded else { throw FakeHTTPServerError("openssl genpkey: \(gen.stderr)") }
        let account: JSONValue = [
            "type": "service_account", "project_id": "relay-test", "private_key_id": "k1",
            "private_key": .string(try String(contentsOfFile: keyPath, encoding: .utf8)),
            "client_email": "herald@relay-test.iam.gserviceaccount.com", "token_uri": .string(fake.baseURL + "/token"),
        ]
        try account.canonicalString.write(toFile: home + "/sa.json", atomically: true, encoding: .utf8)
        return home + "/sa.json"
    }

    /// The fake FCM's answers: an access token, then `send` for every message.
    func fcmAnswers(_ send: [FakeHTTPResponse]) async throws {
        try await apns.route(
            "/token", [.json(200, #"{"access_token":"ya29.relay-test","expires_in":3600,"token_type":"Bearer"}"#)])
        try await apns.route(Self.fcmSendPath, send)
    }

    /// Runs `body` with a started rig and a fake APNs, stopping both afterwards.
    static func with(
        relays: String, withHub: Bool = true, fcm: Bool = false, tls: Bool = false,
        _ body: (RelayRig) async throws -> Void
    ) async throws {
        try await withFakeHTTPServer { apns in
            let rig = try await RelayRig.start(apns: apns, relays: relays, withHub: withHub, fcm: fcm, tls: tls)
            do {
                try await body(rig)
            } catch {
                await rig.stop()
                throw error
            }
            await rig.stop()
        }
    }

    /// Runs `body` with two relays (no hub) on one store and one fake APNs, stopping both afterwards.
    static func pair(
        relays: String, store: String, _ body: (RelayRig, RelayRig, FakeHTTPServer) async throws -> Void
    ) async throws {
        try await withFakeHTTPServer { apns in
            let one = try await RelayRig.start(apns: apns, relays: relays, withHub: false, store: store)
            let two = try await RelayRig.start(apns: apns, relays: relays, withHub: false, store: store)
            do {
                try await body(one, two, apns)
            } catch {
                await one.stop()
                await two.stop()
                throw error
            }
            await one.stop()
            await two.stop()
        }
    }

    /// The relay's (B's) config in `home`: its store (`store`, else SQLite in `home`), an `apns` channel
    /// (and a hapi-v1 `direct` one) on the fake, the API tokens `relayToken` and `readToken`, and
    /// `server.relays` (`relays`, indented by four spaces). `herald serve` processes use it too
    /// (``processes(relays:url:_:)``), with `listen` set.
    static func relayConfig(
        home: String, apns: FakeHTTPServer, relays: String, store: String? = nil, fcm: Bool = false, tls: Bool = false,
        listen: String? = nil
    ) throws -> String {
        let p8 = home + "/AuthKey.p8"
        try P256PrivateKey().pemRepresentation.write(toFile: p8, atomically: true, encoding: .utf8)
        let fcmChannel =
            fcm
            ? "  fcm: { type: fcm, service-account: \(try fcmAccount(home, apns)), endpoint: \"\(apns.baseURL)\" }\n"
            : ""
        let apnsKeys =
            "type: apns, key-p8: \(p8), key-id: TESTKEY123, team-id: TEAM123456, topic: com.example.app"
        return """
            version: 1
            store: \(store ?? "{ path: \(home)/relay.db }")
            tls: { ca-file: \(apns.caFile) }
            channels:
              apns: { \(apnsKeys), endpoints: { production: "\(apns.baseURL)", sandbox: "\(apns.baseURL)/sandbox" } }
              direct: { \(apnsKeys), encryption: hapi-v1, endpoints: { production: "\(apns.baseURL)" } }
            \(fcmChannel)routes:
              default: []
              namespaces:
                direct:
                  - deliver: [direct]
            server:
            \(listen.map { "  listen: \($0)\n" } ?? "")  tokens:
                - { name: hub, sha256: \(TokenAuthenticator.sha256Hex(of: relayToken)), scopes: [relay] }
                - { name: reader, sha256: \(TokenAuthenticator.sha256Hex(of: readToken)), namespaces: ["*"], scopes: [read] }
            \(tls ? "  tls: { cert: \(try selfSigned(home)), key: \(home)/tls-key.pem }\n" : "")  relays:
            \(relays)
            """
    }

    /// Two `herald serve` processes with `relays` on the PostgreSQL database `url`, their `apns`
    /// channels on one fake APNs: the scale-out of docs/relay-server.md with real processes.
    static func processes(
        relays: String, url: String, _ body: (ServeProcess, ServeProcess, FakeHTTPServer) async throws -> Void
    ) async throws {
        try await withFakeHTTPServer { apns in
            let make = {
                try ServeProcess { home, listen in
                    (try? relayConfig(
                        home: home, apns: apns, relays: relays, store: "{ url: \"\(url)\" }", listen: listen))
                        ?? ""
                }
            }
            let one = try make()
            let two = try make()
            do {
                try await one.start()
                try await two.start()
                try await body(one, two, apns)
            } catch {
                await one.cleanUp()
                await two.cleanUp()
                throw error
            }
            await one.cleanUp()
            await two.cleanUp()
        }
    }

    /// The APNs answer for every device request.
    func apnsAnswers(_ status: Int, _ reason: String? = nil, headers: [String: String] = [:]) async throws {
        try await RelayRig.apnsAnswers(apns, status, reason, headers: headers)
    }

    /// The fake APNs `apns` answers every device request (production and sandbox) with `status`.
    static func apnsAnswers(
        _ apns: FakeHTTPServer, _ status: Int, _ reason: String? = nil, headers: [String: String] = [:]
    ) async throws {
        try await apns.reset()
        var h = headers
        h["apns-id"] = h["apns-id"] ?? "00000000-0000-0000-0000-000000000001"
        let body = reason.map { Array("{\"reason\":\"\($0)\"}".utf8) } ?? []
        for prefix in ["/3/device/", "/sandbox/3/device/"] {
            try await apns.route(prefix, [FakeHTTPResponse(status: status, headers: h, body: body)])
        }
    }

    /// Runs a script of Tests/ServerTests/Scripts and returns its stdout lines as JSON.
    static func script(_ name: String, _ arguments: [String]) throws -> [JSONValue] {
        let r = try Subprocess.run(
            executable: "python3",
            arguments: [ServeProcess.repositoryRoot + "/Tests/ServerTests/Scripts/" + name] + arguments)
        guard r.code == 0 else { throw SubprocessError("\(name) exited \(r.code): \(r.stderr)") }
        return try r.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
    }
}
