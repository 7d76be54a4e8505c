import ChannelAPI
import ChannelSupport
import HeraldCrypto

/// One push Home Assistant Core's `mobile_app` notify platform posted to an app's `push_url`, read and
/// checked, and the provider payloads made from it (pure; seed 003).
struct HomeAssistantPush: Equatable {
    /// `push_token`.
    var token: String
    /// `registration_info` as received (`app_id`, `app_version`, `os_version`, `webhook_id`…).
    var registration: [String: JSONValue]
    /// `registration_info.app_id`.
    var appId: String
    /// The clear notification (`message`, `title`, `data`); nil for the encrypted form.
    var plain: Plain?
    /// `encrypted_data` of the encrypted form.
    var encryptedData: String?

    /// The clear fields.
    struct Plain: Equatable {
        var message: String
        var title: String?
        var data: [String: JSONValue]
    }

    /// Why a request is refused before anything is sent.
    struct Refusal: Error, Equatable {
        var status: Int
        var errorType: String
        var message: String
    }

    /// The alert iOS shows only when its notification service extension cannot decrypt (seed 003).
    static let encryptedAlert: JSONValue = [
        "title": "Encrypted notification",
        "body": "If you're seeing this, something has gone wrong with encryption",
    ]

    /// The largest APNs alert payload.
    static let maxAPNsBytes = 4096
    /// The largest FCM message (FCM's 4,000-byte data limit, with room for the envelope).
    static let maxFCMBytes = 4096

    /// Reads a `push_url` body.
    static func parse(_ body: [UInt8]) throws(Refusal) -> HomeAssistantPush {
        func bad(_ message: String) -> Refusal { Refusal(status: 400, errorType: "InvalidRequest", message: message) }
        guard let value = try? JSONValue.parse(body), let o = value.objectValue else {
            throw bad("The body must be a JSON object.")
        }
        guard let token = o["push_token"]?.stringValue, !token.isEmpty, token.utf8.count <= 4096 else {
            throw bad("You did not send a token!")
        }
        guard let registration = o["registration_info"]?.objectValue else {
            throw bad("registration_info must be an object.")
        }
        guard let appId = registration["app_id"]?.stringValue, !appId.isEmpty else {
            throw bad("registration_info.app_id must be a string.")
        }
        for key in ["app_version", "os_version", "webhook_id"] {
            if let v = registration[key], v.stringValue == nil {
                throw bad("registration_info.\(key) must be a string.")
            }
        }
        var push = HomeAssistantPush(token: token, registration: registration, appId: appId)
        let encrypted: Bool
        switch o["encrypted"] {
        case nil, .null?, .bool(false)?: encrypted = false
        case .bool(true)?: encrypted = true
        default: throw bad("encrypted must be true or false.")
        }
        if encrypted {
            guard let data = o["encrypted_data"]?.stringValue, let sealed = try? Base64.decode(data),
                sealed.count >= 24 + 16
            else { throw bad("encrypted_data must be base64 of a secretbox nonce, MAC and ciphertext.") }
            push.encryptedData = data
            return push
        }
        guard let message = o["message"]?.stringValue else { throw bad("You did not send a message!") }
        var plain = Plain(message: message, data: [:])
        switch o["title"] {
        case nil, .null?: break
        case .string(let t)?: plain.title = t
        default: throw bad("title must be a string.")
        }
        switch o["data"] {
        case nil, .null?: break
        case .object(let d)?: plain.data = d
        default: throw bad("data must be an object.")
        }
        push.plain = plain
        return push
    }

    /// `registration_info` as the compact JSON text the seed's forwarder puts in `data`.
    var registrationText: String { JSONValue.object(registration).canonicalString }

    /// The collapse tag: `data.tag`.
    var tag: String? { plain?.data["tag"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } }

    /// The APNs push: the encrypted form as the seed (the alert, `mutable-content: 1`, the
    /// `encrypted`, `encrypted_data` and `registration_info` strings at the top level); the clear form
    /// mapped field by field.
    func apns() throws(Refusal) -> PreparedPush {
        let payload: JSONValue
        if let encryptedData {
            payload = [
                "aps": ["alert": Self.encryptedAlert, "mutable-content": 1],
                "encrypted": "true", "encrypted_data": .string(encryptedData),
                "registration_info": .string(registrationText),
            ]
        } else {
            payload = .object(Self.apnsClear(plain ?? Plain(message: "", data: [:])))
        }
        let size = payload.canonicalBytes.count
        guard size <= Self.maxAPNsBytes else { throw Self.tooLarge(size, Self.maxAPNsBytes) }
        return PreparedPush(priority: 10, expiration: 0, collapseID: tag, payload: payload)
    }

    /// The clear APNs body: `aps` from `data.push` (sound, badge, category… as HA's iOS schema puts
    /// them there) with `alert {title, subtitle, body}`, `mutable-content: 1` when the service
    /// extension has work (an image, an attachment, actions); every other `data` key at the top level.
    static func apnsClear(_ plain: Plain) -> [String: JSONValue] {
        var data = plain.data
        var aps = data.removeValue(forKey: "push")?.objectValue ?? [:]
        var alert: [String: JSONValue] = ["body": .string(plain.message)]
        if let t = plain.title { alert["title"] = .string(t) }
        if let s = data.removeValue(forKey: "subtitle")?.stringValue { alert["subtitle"] = .string(s) }
        aps["alert"] = .object(alert)
        if data["image"] != nil || data["attachment"] != nil || data["actions"] != nil {
            aps["mutable-content"] = 1
        }
        data.removeValue(forKey: "apns_headers")
        data["aps"] = .object(aps)
        return data
    }

    /// The FCM `message` (no `token`): a data message. Encrypted: the seed's `data` strings and its
    /// `apns` alert block; clear: `message`, `title` and every `data` key as a string (objects and
    /// arrays as JSON text), `webhook_id`, and `collapse_key` = the tag. Both with high Android priority.
    func fcm() throws(Refusal) -> PreparedPush {
        var message: [String: JSONValue]
        if let encryptedData {
            message = [
                "data": [
                    "encrypted": "true", "encrypted_data": .string(encryptedData),
                    "registration_info": .string(registrationText),
                ],
                "apns": ["payload": ["aps": ["alert": Self.encryptedAlert, "mutable-content": 1]]],
                "android": ["priority": "high"],
            ]
        } else {
            let plain = plain ?? Plain(message: "", data: [:])
            var data: [String: JSONValue] = [:]
            for (k, v) in plain.data { data[k] = .string(v.stringValue ?? v.canonicalString) }
            data["message"] = .string(plain.message)
            if let t = plain.title { data["title"] = .string(t) }
            if let w = registration["webhook_id"]?.stringValue { data["webhook_id"] = .string(w) }
            var android: [String: JSONValue] = ["priority": "high"]
            if let tag { android["collapse_key"] = .string(tag) }
            message = ["data": .object(data), "android": .object(android)]
        }
        let size = JSONValue.object(message).canonicalBytes.count
        guard size <= Self.maxFCMBytes else { throw Self.tooLarge(size, Self.maxFCMBytes) }
        return PreparedPush(priority: 10, expiration: 0, collapseID: tag, payload: .object(message))
    }

    static func tooLarge(_ size: Int, _ limit: Int) -> Refusal {
        Refusal(
            status: 413, errorType: "PayloadTooLarge",
            message: "The notification would be \(size) bytes, over the provider's \(limit).")
    }
}
