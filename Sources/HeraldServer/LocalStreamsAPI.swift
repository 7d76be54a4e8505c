import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldMHD
import Router

/// Local push (docs/http-api.md, "Local push"): `GET /v1/devices/{deviceId}/stream`, the open
/// stream an app holds so that a `local` channel delivers to it straight from this server. Server-Sent
/// Events, authenticated by the device's own stream secret (``LocalStreamSecret``), which a
/// registration's answer carries when a `local` channel serves the device.
struct LocalStreamsAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", RoutePattern("/v1/devices/{deviceId}/stream"),
                access: .custom { request, api in try api.localStreamCaller(request) }
            ) { api, call in try api.localStream(call.request, deviceId: call["deviceId"], token: try call.token) }
        ]
    }
}

extension HeraldAPI {
    /// The caller of a stream request: the device the path and `?namespace=` name, when the bearer
    /// (`Authorization: Bearer` or `?token=`) is its stream secret; 401 otherwise. Rate-limited and
    /// counted against `max-streams-per-token` under the device's own name.
    func localStreamCaller(_ request: ServerRequest) throws -> APIToken? {
        let parts = RoutePattern.segments(of: request.path)
        guard parts.count == 4, !parts[2].isEmpty else { throw APIError.notFound("no route \(request.path)") }
        let deviceId = parts[2]
        let namespace = try HeraldAPI.namespaceParameter(request)
        var presented: String?
        if let header = request.header("authorization") {
            let p = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if p.count == 2, p[0].lowercased() == "bearer" { presented = p[1].trimmingCharacters(in: .whitespaces) }
        }
        if presented == nil { presented = request.query["token"] }
        guard let presented, !presented.isEmpty else {
            throw APIError.unauthorized("send the device's stream secret: Authorization: Bearer hls_… or ?token=")
        }
        let key = try LocalStreamSecret.key(in: router.store)
        guard LocalStreamSecret.matches(presented, key: key, namespace: namespace, deviceId: deviceId) else {
            throw APIError.unauthorized("not the stream secret of device \(deviceId) in namespace \(namespace)")
        }
        return APIToken(
            name: "device:\(namespace)/\(deviceId)", sha256: "", namespaces: [namespace], scopes: ["stream"])
    }

    /// The `stream` member of a registration's answer: the device's stream path and secret, when a
    /// `local` channel serves it; nil otherwise.
    func localStreamAnswer(for device: Device) throws -> JSONValue? {
        guard servedLocally(device) else { return nil }
        let key = try LocalStreamSecret.key(in: router.store)
        var path = "/v1/devices/\(LocalStreamsAPI.escaped(device.deviceId))/stream"
        if device.namespace != "default" { path += "?namespace=\(LocalStreamsAPI.escaped(device.namespace))" }
        return [
            "path": .string(path),
            "secret": .string(
                LocalStreamSecret.secret(key: key, namespace: device.namespace, deviceId: device.deviceId)),
        ]
    }

    /// Whether an enabled `local` channel of the device's route serves it.
    func servedLocally(_ device: Device) -> Bool {
        let config = router.config
        return router.reach(of: device).channels.contains { config.channel($0)?.type == "local" }
    }

    /// Whether `deviceId` of `namespace` is registered on a platform a `local` channel serves.
    func hasLocalRegistration(namespace: String, deviceId: String) throws -> Bool {
        let platforms = Set(router.config.channels.filter { $0.type == "local" && $0.enabled }.flatMap(\.platforms))
        for platform in platforms.sorted() {
            if let d = try router.store.device(namespace: namespace, deviceId: deviceId, platform: platform),
                servedLocally(d)
            {
                return true
            }
        }
        return false
    }

    func localStream(_ request: ServerRequest, deviceId: String, token: APIToken) throws -> ServerResponse {
        let namespace = token.namespaces.first ?? "default"
        guard try hasLocalRegistration(namespace: namespace, deviceId: deviceId) else {
            throw APIError.notFound("device \(deviceId) of namespace \(namespace) is served by no local channel")
        }
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
        ]
        if request.method == "HEAD" { return ServerResponse(status: 200, headers: headers) }
        try takeSlot(token, stream: true)
        let stream = ResponseStream()
        stream.write(Array(": stream\n\n".utf8))
        let hub = router.localStreams
        let id = hub.attach(LocalStreamHub.DeviceKey(namespace: namespace, deviceId: deviceId)) { push in
            let written = stream.write(LocalStreamsAPI.frame(push))
            if !written { stream.finish() }
            return written
        }
        let key = ObjectIdentifier(stream)
        streams.withLock { $0[key] = stream }
        stream.onClose { [weak self] in
            hub.detach(id)
            self?.releaseSlot(token, stream: true)
            _ = self?.streams.withLock { $0.removeValue(forKey: key) }
        }
        let keepalive = settings.withLock { $0.server.keepalive }
        Task(executorPreference: executor) { [weak self] in
            var lastWrite = ContinuousClock.now
            while !stream.isFinished {
                if self?.isStopping ?? true { return stream.finish() }
                try? await Task.sleep(for: min(.seconds(1), keepalive))
                if ContinuousClock.now - lastWrite >= keepalive {
                    guard stream.write(Array(": keepalive\n\n".utf8)) else { return stream.finish() }
                    lastWrite = .now
                }
            }
        }
        return ServerResponse(status: 200, headers: headers, body: .stream(stream))
    }
}

extension LocalStreamsAPI {
    /// `text` percent-encoded for a path segment or a query value (unreserved characters kept).
    static func escaped(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The SSE frame of one push: `id:` the delivery id, `event: notification`, `data:` the
    /// payload's canonical JSON (one line).
    static func frame(_ push: LocalPush) -> [UInt8] {
        var bytes = Array("id: \(push.deliveryId)\nevent: notification\ndata: ".utf8)
        bytes.append(contentsOf: push.payload.canonicalBytes)
        bytes.append(contentsOf: Array("\n\n".utf8))
        return bytes
    }
}

/// A device's stream secret: `hls_` and the base64url HMAC-SHA-256, under a random key the store
/// keeps (so every process sharing the store accepts it), of the device's namespace and id. It is
/// the same for every registration of the device, and is valid while a `local` channel serves the
/// device: removing the device revokes it.
enum LocalStreamSecret {
    /// What every secret starts with.
    static let prefix = "hls_"
    /// The channel-state area holding the key (no channel can have this name).
    static let area = "~local-streams"

    /// The store's key, made (32 random bytes) the first time it is asked for.
    static func key(in store: any HeraldStore) throws -> [UInt8] {
        let state = store.channelState(area)
        if let k = try state.value(forKey: "key"), k.count == 32 { return k }
        return try state.update("key") { current in
            if let c = current, c.count == 32 { return (c, c) }
            let fresh = SecureRandom.bytes(32)
            return (fresh, fresh)
        }
    }

    /// The secret of `deviceId` in `namespace` under `key`.
    static func secret(key: [UInt8], namespace: String, deviceId: String) -> String {
        let message = Array("herald local stream\u{0}\(namespace)\u{0}\(deviceId)".utf8)
        return prefix + Base64.urlEncode(HMACSHA256.authenticationCode(key: key, message: message))
    }

    /// Whether `presented` is that secret (compared in constant time).
    static func matches(_ presented: String, key: [UInt8], namespace: String, deviceId: String) -> Bool {
        let expected = Array(secret(key: key, namespace: namespace, deviceId: deviceId).utf8)
        let given = Array(presented.utf8)
        return given.count == expected.count && ConstantTime.equals(given, expected)
    }
}
