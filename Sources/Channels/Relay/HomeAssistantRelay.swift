import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import HeraldSodium

/// `protocol: home-assistant`: POSTs what Home Assistant's `notify.mobile_app_*` posts to the
/// device's `pushUrl` (a mobile_app push forwarder):
/// `{message, title?, data?, push_token, registration_info{app_id, app_version, os_version, webhook_id?}}`.
///
/// With `encryption: secretbox` the notification fields (`message`, `title`, `data`) travel only inside
/// `encrypted_data` = base64(nonce(24) ‖ MAC(16) ‖ ciphertext) (libsodium `crypto_secretbox`, PyNaCl's
/// combined layout), keyed with hex-decode(device `secret`) — HA's "current" (no-legacy) scheme. The
/// legacy key derivation (the secret's UTF-8 bytes cut/padded to 32) is never used for sending.
struct HomeAssistantRelay: Sendable {
    let allowHosts: [String]
    let encrypt: Bool
    let context: ChannelContext

    func validate(_ device: Device) throws(ValidationError) -> Device {
        guard let url = device.string("pushUrl") else { throw ValidationError(field: "pushUrl", "required https URL") }
        try URLPolicy.check(url, field: "pushUrl", allowHosts: allowHosts)
        guard device.token?.isEmpty == false else { throw ValidationError(field: "token", "required") }
        if encrypt, HomeAssistantRelay.key(secret: device.string("secret")) == nil {
            throw ValidationError(
                field: "secret",
                "required with encryption: secretbox: the Home Assistant registration secret, exactly 64 hex characters"
            )
        }
        return device
    }

    /// The secretbox key for a registration `secret` under HA's current scheme: hex-decode of exactly
    /// 64 hex characters (32 bytes); nil for anything else (pure).
    static func key(secret: String?) -> [UInt8]? {
        guard let secret, secret.utf8.count == 2 * SecretBox.keyLength else { return nil }
        var key: [UInt8] = []
        key.reserveCapacity(SecretBox.keyLength)
        var it = secret.utf8.makeIterator()
        while let hi = it.next(), let lo = it.next() {
            guard let h = hexValue(hi), let l = hexValue(lo) else { return nil }
            key.append(h << 4 | l)
        }
        return key
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// The notification fields HA would send in clear: `message`, `title`?, `data`? (pure). `data`
    /// carries the notification's data plus `url`, `tag` and `actions`
    /// (`[{action, title, uri?, destructive?}]`) in HA's schema.
    static func notificationFields(_ n: HeraldNotification) -> [String: JSONValue] {
        var o: [String: JSONValue] = ["message": .string(n.body ?? n.title ?? "")]
        if let t = n.title, n.body != nil { o["title"] = .string(t) }
        var data: [String: JSONValue] = n.data.mapValues { .string($0) }
        if let u = n.url { data["url"] = .string(u) }
        if let tag = n.collapseTag { data["tag"] = .string(tag) }
        if !n.actions.isEmpty {
            data["actions"] = .array(
                n.actions.map { a in
                    var m: [String: JSONValue] = ["action": .string(a.id), "title": .string(a.title)]
                    if let u = a.url { m["uri"] = .string(u) }
                    if a.destructive { m["destructive"] = .bool(true) }
                    return .object(m)
                })
        }
        if !data.isEmpty { o["data"] = .object(data) }
        return o
    }

    /// `registration_info` `{app_id, app_version, os_version, webhook_id?}` from the device (pure).
    static func registrationInfo(_ device: Device) -> JSONValue {
        let info = device.fields["registrationInfo"]?.objectValue ?? [:]
        var reg: [String: JSONValue] = [:]
        for (from, to) in [("appId", "app_id"), ("appVersion", "app_version"), ("osVersion", "os_version")] {
            if let v = info[from]?.stringValue { reg[to] = .string(v) }
        }
        if let w = info["webhookId"]?.stringValue { reg["webhook_id"] = .string(w) }
        return .object(reg)
    }

    /// The clear forwarder body (pure).
    static func body(_ n: HeraldNotification, device: Device) -> [UInt8] {
        var o = notificationFields(n)
        o["push_token"] = .string(device.token ?? "")
        o["registration_info"] = registrationInfo(device)
        return JSONValue.object(o).canonicalBytes
    }

    /// Why an encrypted body could not be built.
    enum EncryptError: Error, CustomStringConvertible {
        /// The device has no usable `secret` (never sent in clear instead).
        case noSecret
        /// libsodium refused (wrong nonce length, init failure).
        case sodium(SodiumError)

        var description: String {
            switch self {
            case .noSecret:
                "encryption: secretbox needs the device's registration secret (64 hex characters); not sent in clear"
            case .sodium(let e): "secretbox failed: \(e.description)"
            }
        }
    }

    /// The encrypted forwarder body (pure): `{encrypted: true, encrypted_data, push_token,
    /// registration_info}`, where `encrypted_data` = base64(nonce ‖ MAC ‖ ciphertext) of the canonical
    /// JSON of ``notificationFields(_:)`` under key = hex-decode(`secret`).
    static func encryptedBody(_ n: HeraldNotification, device: Device, nonce: [UInt8]) throws(EncryptError)
        -> [UInt8]
    {
        guard let key = key(secret: device.string("secret")) else { throw .noSecret }
        let plaintext = JSONValue.object(notificationFields(n)).canonicalBytes
        let box: [UInt8]
        do { box = try SecretBox.seal(plaintext, key: key, nonce: nonce) } catch { throw .sodium(error) }
        let o: [String: JSONValue] = [
            "encrypted": .bool(true), "encrypted_data": .string(Base64.encode(nonce + box)),
            "push_token": .string(device.token ?? ""), "registration_info": registrationInfo(device),
        ]
        return JSONValue.object(o).canonicalBytes
    }

    /// Maps the forwarder's answer (pure).
    static func classify(_ target: DeliveryTarget, status: Int, body: [UInt8], now: Date, retryAfter: Duration?)
        -> DeliveryResult
    {
        let json = try? JSONValue.parse(body)
        let reason = RelaySupport.reason(status: status, body: body)
        var details: [String: String] = [:]
        for (k, v) in json?["rateLimits"]?.objectValue ?? [:] {
            if let i = v.intValue {
                details["rateLimits.\(k)"] = String(i)
            } else if let s = v.stringValue {
                details["rateLimits.\(k)"] = s
            }
        }
        let errorType = json?["errorType"]?.stringValue
        switch status {
        case 200, 201, 202:
            var r = DeliveryResult.delivered(target, status: status, details: details)
            r.providerMessageId = json?["messageId"]?.stringValue
            return r
        case 429:
            var after = retryAfter
            // Parsed without ICU: its ISO 8601 formatter crashes on some provider text (a long fraction).
            if let resets = json?["rateLimits"]?["resetsAt"]?.stringValue, let d = ISO8601Time.date(parsing: resets) {
                after = RetryAfter.until(d, now: now)
            }
            var r = DeliveryResult.retry(target, status: status, reason: reason, retryAfter: after)
            r.details = details
            return r
        case 500 where errorType == "InvalidToken":
            return .dead(target, status: status, reason: reason)
        case 500 where errorType == "PayloadTooLarge":
            return .failed(target, status: status, reason: reason)
        case 500...599:
            return .retry(target, status: status, reason: reason, retryAfter: retryAfter)
        default:
            return .failed(target, status: status, reason: reason)
        }
    }

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let notification = request.notification
        return await ConcurrentMap.map(request.targets, limit: 32) { target in
            await self.send(notification, to: target)
        }
    }

    private func send(_ notification: HeraldNotification, to target: DeliveryTarget) async -> DeliveryResult {
        guard let device = target.device, let url = device.string("pushUrl") else {
            return .failed(target, reason: "device has no pushUrl")
        }
        do { try URLPolicy.check(url, field: "pushUrl", allowHosts: allowHosts) } catch {
            return .failed(target, reason: error.description)
        }
        let body: [UInt8]
        if encrypt {
            do {
                body = try HomeAssistantRelay.encryptedBody(
                    notification, device: device, nonce: context.random.bytes(SecretBox.nonceLength))
            } catch {
                return .failed(target, reason: error.description)
            }
        } else {
            body = HomeAssistantRelay.body(notification, device: device)
        }
        do {
            let response = try await context.http.send(
                HTTPRequest(
                    url: url, headers: [HTTPHeader("content-type", "application/json")], body: body,
                    timeout: .seconds(10), addressPolicy: URLPolicy.addressPolicy(for: url, allowHosts: allowHosts)))
            let now = context.clock.now()
            return HomeAssistantRelay.classify(
                target, status: response.status, body: response.body, now: now,
                retryAfter: RetryAfter.parse(response, now: now))
        } catch {
            // A pushUrl that resolves to an address device URLs may not reach: permanent, never retried.
            if error.code == .blockedAddress { return .failed(target, reason: RelaySupport.transportReason(error)) }
            return .retry(target, reason: RelaySupport.transportReason(error))
        }
    }
}
