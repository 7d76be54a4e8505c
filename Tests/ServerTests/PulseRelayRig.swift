import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting

/// The app's and a site's side of a Pulse relay Herald (docs/pulse-relay.md), over HTTP: register a
/// phone, mint site keys, report activities, and sign pushes as section 三 of the guide says. Over
/// an in-process relay (``init(rig:)``) or a `herald serve` process on plain HTTP (``init(port:)``).
struct PulseRelayRig {
    private let inProcess: RelayRig?
    let port: Int

    /// The relay over an in-process Herald.
    init(rig: RelayRig) {
        inProcess = rig
        port = rig.server.port
    }

    /// The relay of a `herald serve` process listening on `port` (plain HTTP).
    init(port: Int) {
        inProcess = nil
        self.port = port
    }

    /// The in-process Herald: its fake APNs, log and home (an error for a serve process).
    var rig: RelayRig {
        get throws {
            guard let inProcess else { throw SubprocessError("a herald serve process has no in-process rig") }
            return inProcess
        }
    }

    /// A push-to-start token and an activity token (hex).
    static let startToken = String(repeating: "5a", count: 32)
    static let activityToken = String(repeating: "ac", count: 32)

    /// The relays YAML for a pulse relay with a fresh key file; `extra` adds keys (`update-interval: 0s`).
    static func relays(extra: String = "") throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pulse-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/pulse.key"
        try Base64.encode(SecureRandom.bytes(32)).write(toFile: file, atomically: true, encoding: .utf8)
        return "        pulse: { channel: apns, key-file: \(file)\(extra.isEmpty ? "" : ", " + extra) }"
    }

    /// One phone of the app: its id and credential.
    struct Phone {
        var deviceId: String
        var credential: String
    }

    /// One site's saved key (what the site's `connect` endpoint stores).
    struct Site {
        var deviceId: String
        var sourceId: String
        var pushKey: String
    }

    func call(_ method: String, _ path: String, credential: String? = nil, json: String? = nil) async throws
        -> RawResponse
    {
        var headers: [String: String] = [:]
        if let credential { headers["Authorization"] = "Bearer \(credential)" }
        if json != nil { headers["Content-Type"] = "application/json" }
        return try await send(method, path, headers: headers, body: json.map { Array($0.utf8) })
    }

    /// One request: raw HTTP, or `curl` trusting the rig's certificate when the relay terminates TLS.
    func send(_ method: String, _ path: String, headers: [String: String], body: [UInt8]?) async throws -> RawResponse {
        guard let rig = inProcess, rig.scheme == "https" else {
            return try await RawHTTP.request(port: port, method, path, headers: headers, body: body)
        }
        var arguments = ["-s", "-i", "--cacert", rig.home + "/tls-cert.pem", "-X", method]
        for (k, v) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["-H", "\(k): \(v)"] }
        if body != nil { arguments += ["--data-binary", "@-"] }
        let r = try Subprocess.run(executable: "curl", arguments: arguments + [rig.base + path], stdin: body ?? [])
        let out = r.stdoutBytes
        guard let split = (0..<max(0, out.count - 3)).first(where: { out[$0..<$0 + 4] == [13, 10, 13, 10] }) else {
            throw SubprocessError("curl: \(r.stderr)")
        }
        let head = String(decoding: out[..<split], as: UTF8.self).components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        return RawResponse(status: status, headers: fields, body: Array(out[(split + 4)...]))
    }

    static func json(_ r: RawResponse) -> JSONValue { (try? JSONValue.parse(r.body)) ?? .null }

    func register(token: String = startToken, environment: String = "production") async throws -> Phone {
        let r = try await call(
            "POST", "/v1/pulse/devices", json: #"{"pushToStartToken":"\#(token)","environment":"\#(environment)"}"#)
        let o = Self.json(r)
        guard r.status == 201, let id = o["deviceId"]?.stringValue, let c = o["credential"]?.stringValue else {
            throw SubprocessError("register: \(r.status) \(r.text)")
        }
        return Phone(deviceId: id, credential: c)
    }

    func mint(_ phone: Phone, name: String = "Example Shop") async throws -> Site {
        let r = try await call(
            "POST", "/v1/pulse/devices/\(phone.deviceId)/sites", credential: phone.credential,
            json: #"{"name":"\#(name)"}"#)
        let o = Self.json(r)
        guard r.status == 201, let s = o["sourceId"]?.stringValue, let k = o["pushKey"]?.stringValue else {
            throw SubprocessError("mint: \(r.status) \(r.text)")
        }
        return Site(deviceId: phone.deviceId, sourceId: s, pushKey: k)
    }

    /// Reports the activity's push token for `ref` (nil: it ended or was dismissed).
    @discardableResult
    func activity(_ phone: Phone, _ site: Site, ref: String, token: String? = activityToken) async throws -> Int {
        let path = "/v1/pulse/devices/\(phone.deviceId)/sites/\(site.sourceId)/activities/\(ref)"
        if let token {
            return try await call("POST", path, credential: phone.credential, json: #"{"token":"\#(token)"}"#).status
        }
        return try await call("DELETE", path, credential: phone.credential).status
    }

    /// Signs and posts `body`; `path`, `seconds`, `requestId`, `key` and `signedBody` override what is signed.
    func push(
        _ site: Site, _ body: JSONValue, seconds: Int64? = nil, requestId: String? = nil, key: String? = nil,
        signedPath: String? = nil, signedBody: [UInt8]? = nil, rawBody: [UInt8]? = nil
    ) async throws -> RawResponse {
        let bytes = rawBody ?? body.canonicalBytes
        let headers = try Self.signed(
            site, bytes, seconds: seconds, requestId: requestId, key: key, signedPath: signedPath,
            signedBody: signedBody)
        return try await send("POST", "/v1/devices/\(site.deviceId)/push", headers: headers, body: bytes)
    }

    /// The headers of a push of `bytes` signed as the guide says.
    static func signed(
        _ site: Site, _ bytes: [UInt8], seconds: Int64? = nil, requestId: String? = nil, key: String? = nil,
        signedPath: String? = nil, signedBody: [UInt8]? = nil
    ) throws -> [String: String] {
        let path = "/v1/devices/\(site.deviceId)/push"
        let t = seconds ?? Int64(Date().timeIntervalSince1970)
        let rid = requestId ?? UUID().uuidString.lowercased()
        let digest = SHA256.hash(signedBody ?? bytes).map { String(format: "%02x", $0) }.joined()
        let message = "POST\n\(signedPath ?? path)\n\(t)\n\(rid)\n\(digest)"
        let mac = HMACSHA256.authenticationCode(
            key: try Base64.urlDecode(key ?? site.pushKey), message: Array(message.utf8))
        return [
            "Content-Type": "application/json", "X-Pulse-Source": site.sourceId,
            "X-Pulse-Auth": "v2 \(t) \(rid) \(Base64.urlEncode(mac))",
        ]
    }

    /// A signed push of `body` to the plain-HTTP relay on `port`.
    static func push(port: Int, _ site: Site, _ body: JSONValue) async throws -> RawResponse {
        let bytes = body.canonicalBytes
        return try await RawHTTP.request(
            port: port, "POST", "/v1/devices/\(site.deviceId)/push", headers: try signed(site, bytes), body: bytes)
    }

    /// A push body with the guide's fields.
    static func body(
        _ event: String = "update", ref: String = "order-1024", revision: Int64, alert: String? = nil,
        state: [String: JSONValue] = [:], extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        var s: [String: JSONValue] = [
            "title": "订单 #1024", "summary": "骑手已取餐", "status": "running", "revision": .number(Double(revision)),
        ]
        for (k, v) in state { s[k] = v }
        var o: [String: JSONValue] = [
            "ref": .string(ref), "event": .string(event),
            "timestamp": .number(Date().timeIntervalSince1970.rounded(.down)),
            "contentState": .object(s),
        ]
        if let alert { o["alert"] = ["body": .string(alert)] }
        for (k, v) in extra { o[k] = v }
        return .object(o)
    }
}
