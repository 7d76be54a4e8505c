import ChannelAPI
import Foundation
import HeraldCrypto

/// hapi's native data contract, shared by the APNs, FCM and relay channels: the flat string map
/// a hapi app reads (`type, sessionId, sessionName, url, requestId, title, body, severity,
/// contractVersion, notifySummary`), and its AES-256-GCM envelope.
public enum HapiPayload {
    /// The data map for `notification`: absent fields are left out; `body` has any
    /// `AGENT_NOTIFY_SUMMARY` line stripped and the summary moved to `notifySummary`.
    public static func data(for notification: HeraldNotification) -> [String: String] {
        var out: [String: String] = ["type": notification.type, "contractVersion": "1"]
        let composed = NotifySummary.compose(notification)
        if let s = notification.data["sessionId"] { out["sessionId"] = s }
        if let s = notification.data["sessionName"] { out["sessionName"] = s }
        if let s = notification.data["requestId"] { out["requestId"] = s }
        if let u = notification.url { out["url"] = u }
        if let t = notification.title { out["title"] = t }
        if let b = composed.body { out["body"] = b }
        if let s = notification.severity { out["severity"] = s.rawValue }
        if let summary = composed.summary { out["notifySummary"] = summary.canonicalString }
        return out
    }

    /// The plaintext hapi encrypts: canonical JSON of ``data(for:)`` (keys sorted, JSON.stringify bytes).
    public static func plaintext(for notification: HeraldNotification) -> [UInt8] {
        JSONValue.object(data(for: notification).mapValues { .string($0) }).canonicalBytes
    }

    /// The AAD of hapi's envelope.
    public static let associatedData = Array("hapi-push-v1".utf8)

    /// `base64(nonce ‖ ciphertext ‖ tag)` under AES-256-GCM with AAD `hapi-push-v1`.
    /// `nonce` must be 12 fresh random bytes per message (injectable for test vectors).
    public static func envelope(plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(CryptoError) -> String {
        guard key.count == 32 else { throw CryptoError(code: .invalidKey, message: "hapi-v1 needs a 32-byte pushKey") }
        guard nonce.count == 12 else {
            throw CryptoError(code: .invalidInput, message: "hapi-v1 needs a 12-byte nonce")
        }
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, authenticating: associatedData)
        return Base64.encode(nonce + sealed)
    }

    /// The APNs body of a hapi-v1 push: a fixed visible alert (or a silent push), the real content in
    /// `hapi.e`. The same for Herald's direct `apns` path and for Herald serving hapi's relay.
    public static func apnsBody(envelope: String, background: Bool = false) -> JSONValue {
        let aps: JSONValue =
            background
            ? ["content-available": 1]
            : ["mutable-content": 1, "alert": ["title": "HAPI", "body": "New activity"], "sound": "default"]
        return ["aps": aps, "hapi": ["v": 1, "e": .string(envelope)]]
    }

    /// Opens an envelope (for tests and relays).
    public static func open(envelope: String, key: [UInt8]) throws(CryptoError) -> [UInt8] {
        let bytes = try Base64.decode(envelope)
        guard bytes.count >= 12 + 16 else { throw CryptoError(code: .invalidInput, message: "envelope too short") }
        return try AESGCM.open(
            Array(bytes[12...]), key: key, nonce: Array(bytes[..<12]), authenticating: associatedData)
    }
}

/// hapi's `AGENT_NOTIFY_SUMMARY` convention: an agent ends a `ready` message's body with a line
/// `AGENT_NOTIFY_SUMMARY {json}`; the line is stripped from the body and the JSON's known fields
/// (version, agent, project, status, action, summary) travel as `notifySummary`.
public enum NotifySummary {
    /// The marker at the start of the summary line.
    public static let marker = "AGENT_NOTIFY_SUMMARY"
    /// The fields kept from the summary JSON.
    public static let fields = ["version", "agent", "project", "status", "action", "summary"]

    /// The body without the summary line, and the summary (nil when absent or malformed; a
    /// malformed line is left in the body untouched).
    public static func compose(_ notification: HeraldNotification) -> (body: String?, summary: JSONValue?) {
        guard notification.type == "ready", let body = notification.body else { return (notification.body, nil) }
        var lines = body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        while let last = lines.last, last.trimmingCharacters(in: .whitespaces).isEmpty { lines.removeLast() }
        guard let last = lines.last else { return (body, nil) }
        let trimmed = last.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix(marker + " ") || trimmed.hasPrefix(marker + "{") else { return (body, nil) }
        let jsonText = trimmed.dropFirst(marker.count).trimmingCharacters(in: .whitespaces)
        guard let parsed = try? JSONValue.parse(jsonText), let object = parsed.objectValue else { return (body, nil) }
        var kept: [String: JSONValue] = [:]
        for f in fields {
            if let v = object[f], !v.isNull {
                switch v {
                case .string, .number, .bool: kept[f] = v
                default: continue
                }
            }
        }
        lines.removeLast()
        let stripped = lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        return (stripped, kept.isEmpty ? nil : .object(kept))
    }
}
