import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto

/// The `apns-push-type` of a message.
public enum APNsPushType: String, Sendable, CaseIterable {
    /// A visible alert, sound or badge.
    case alert
    /// A silent `content-available` push.
    case background
    /// A PushKit VoIP push (`ios: {"pushType": "voip"}`).
    case voip
    /// An ActivityKit Live Activity push.
    case liveactivity

    /// The suffix added to the bundle id for `apns-topic`.
    public var topicSuffix: String {
        switch self {
        case .alert, .background: ""
        case .voip: ".voip"
        case .liveactivity: ".push-type.liveactivity"
        }
    }

    /// The largest payload APNs accepts for this type, in bytes.
    public var maxPayloadBytes: Int { self == .voip ? 5120 : 4096 }
}

/// Why a notification cannot be sent to APNs as given: nothing is sent, the delivery fails.
public struct APNsPayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reason, reported verbatim in the delivery result.
    public let reason: String

    /// Creates an error.
    public init(_ reason: String) { self.reason = reason }

    /// The reason.
    public var description: String { reason }
}

/// The headers and payload of one notification, shared by every device of a batch; only
/// hapi-v1 bodies differ per device (each has its own key and nonce).
public struct APNsPreparedNotification: Sendable, Equatable {
    /// `apns-push-type`.
    public let pushType: APNsPushType
    /// `apns-topic`: the bundle id plus the push type's suffix.
    public let topic: String
    /// `apns-priority`.
    public let priority: Int
    /// `apns-expiration`: unix seconds, 0 for "deliver once, do not store".
    public let expiration: Int64
    /// `apns-collapse-id`, at most 64 bytes; nil when the notification has no tag.
    public let collapseID: String?
    /// A Live Activity push token that replaces the device token (`liveActivity.pushToken`).
    public let activityPushToken: String?
    /// The JSON body for devices without encryption; nil when every device gets an envelope.
    public let plainBody: JSONValue?
    /// The canonical hapi plaintext to encrypt per device; nil without encryption.
    public let hapiPlaintext: [UInt8]?
    /// `plainBody` serialised once for the whole batch.
    let plainBytes: [UInt8]?

    /// Creates a prepared notification (normally made by ``APNsPayloadBuilder/prepare(_:now:)``).
    public init(
        pushType: APNsPushType, topic: String, priority: Int, expiration: Int64, collapseID: String?,
        activityPushToken: String?, plainBody: JSONValue?, hapiPlaintext: [UInt8]?
    ) {
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.activityPushToken = activityPushToken
        self.plainBody = plainBody
        self.hapiPlaintext = hapiPlaintext
        self.plainBytes = plainBody?.canonicalBytes
    }

    /// The body for one device: the shared plain body, or a hapi-v1 envelope under the device's
    /// `pushKey` with `nonce` (12 fresh random bytes). Refuses a body over the size limit.
    public func body(for device: Device, nonce: [UInt8]) throws(APNsPayloadError) -> [UInt8] {
        let bytes: [UInt8]
        if let hapiPlaintext {
            guard let encoded = device.string("pushKey") else {
                throw APNsPayloadError("device has no pushKey, which encryption hapi-v1 requires")
            }
            let key: [UInt8]
            do { key = try Base64.decode(encoded) } catch {
                throw APNsPayloadError("device pushKey is not valid base64")
            }
            let envelope: String
            do { envelope = try HapiPayload.envelope(plaintext: hapiPlaintext, key: key, nonce: nonce) } catch {
                throw APNsPayloadError("hapi-v1 encryption failed: \(error.message)")
            }
            bytes = APNsPayloadBuilder.hapiBody(envelope: envelope, background: pushType == .background).canonicalBytes
        } else if let plainBytes {
            bytes = plainBytes
        } else {
            throw APNsPayloadError("no payload")
        }
        guard bytes.count <= pushType.maxPayloadBytes else {
            throw APNsPayloadError(
                "payload is \(bytes.count) bytes; APNs accepts at most \(pushType.maxPayloadBytes) for \(pushType.rawValue)"
            )
        }
        return bytes
    }

    /// The request headers (`authorization` carries the provider token; never log them).
    public func headers(apnsID: String, providerToken: String) -> [HTTPHeader] {
        var out = [
            HTTPHeader("authorization", "bearer \(providerToken)"),
            HTTPHeader("apns-push-type", pushType.rawValue),
            HTTPHeader("apns-topic", topic),
            HTTPHeader("apns-priority", String(priority)),
            HTTPHeader("apns-expiration", String(expiration)),
            HTTPHeader("apns-id", apnsID),
        ]
        if let collapseID { out.append(HTTPHeader("apns-collapse-id", collapseID)) }
        return out
    }
}

/// Builds APNs payloads from notifications (pure: no I/O).
public struct APNsPayloadBuilder: Sendable {
    /// The bundle id.
    public var topic: String
    /// Content mode.
    public var content: APNsContentMode
    /// Encryption mode.
    public var encryption: APNsEncryption

    /// Creates a builder.
    public init(topic: String, content: APNsContentMode = .full, encryption: APNsEncryption = .none) {
        self.topic = topic
        self.content = content
        self.encryption = encryption
    }

    /// The fixed visible part of a hapi-v1 push; the real content travels in `hapi.e`.
    public static func hapiBody(envelope: String, background: Bool = false) -> JSONValue {
        HapiPayload.apnsBody(envelope: envelope, background: background)
    }

    /// Headers and payload for `request` at `now`.
    public func prepare(_ request: DeliveryRequest, now: Date) throws(APNsPayloadError) -> APNsPreparedNotification {
        let n = request.notification
        let expiration: Int64 = n.ttl.map { $0 > 0 ? now.secondsSince1970 + Int64($0) : 0 } ?? 0
        let collapseID = n.collapseTag.map { CollapseID.truncate($0, maxBytes: 64) }.flatMap { $0.isEmpty ? nil : $0 }

        if let la = n.liveActivity {
            let activity = try APNsLiveActivity(la, notification: n, now: now)
            return APNsPreparedNotification(
                pushType: .liveactivity, topic: topic + APNsPushType.liveactivity.topicSuffix,
                priority: activity.priority, expiration: expiration, collapseID: collapseID,
                activityPushToken: activity.pushToken, plainBody: ["aps": .object(activity.aps)], hapiPlaintext: nil)
        }

        let pushType: APNsPushType
        switch n.ios["pushType"] {
        case nil, .null: pushType = .alert
        case .string("alert"): pushType = .alert
        case .string("background"): pushType = .background
        case .string("voip"): pushType = .voip
        default: throw APNsPayloadError("ios.pushType must be alert, background or voip")
        }
        let priority = pushType == .background || n.priority == .low ? 5 : 10

        var plain: JSONValue?
        var hapi: [UInt8]?
        switch encryption {
        case .hapiV1:
            hapi = HapiPayload.plaintext(for: content == .generic ? APNsPayloadBuilder.genericized(n) : n)
        case .none:
            plain = try plainBody(request, pushType: pushType)
        }
        return APNsPreparedNotification(
            pushType: pushType, topic: topic + pushType.topicSuffix, priority: priority, expiration: expiration,
            collapseID: collapseID, activityPushToken: nil, plainBody: plain, hapiPlaintext: hapi)
    }

    /// The notification with generic title and body, for hapi-v1 plaintext under `content: generic`.
    static func genericized(_ n: HeraldNotification) -> HeraldNotification {
        var g = n
        g.title = GenericContent.title(for: n.type)
        g.body = GenericContent.body(for: n)
        return g
    }

    func plainBody(_ request: DeliveryRequest, pushType: APNsPushType) throws(APNsPayloadError) -> JSONValue {
        let n = request.notification
        var aps: [String: JSONValue] = [:]
        var top: [String: JSONValue] = [:]
        switch content {
        case .full:
            for (k, v) in n.data where k != "aps" { top[k] = .string(v) }
            let composed = NotifySummary.compose(n)
            if let url = n.url, top["url"] == nil { top["url"] = .string(url) }
            if let summary = composed.summary, top["notifySummary"] == nil {
                top["notifySummary"] = .string(summary.canonicalString)
            }
            if pushType != .background {
                var alert: [String: JSONValue] = [:]
                if let t = n.title { alert["title"] = .string(t) }
                if let s = n.ios["subtitle"] {
                    guard let s = s.stringValue else { throw APNsPayloadError("ios.subtitle must be a string") }
                    alert["subtitle"] = .string(s)
                }
                if let b = composed.body { alert["body"] = .string(b) }
                aps["alert"] = .object(alert)
            }
        case .generic:
            top["type"] = .string(n.type)
            if let s = n.data["sessionId"] { top["sessionId"] = .string(s) }
            if pushType != .background {
                aps["alert"] = [
                    "title": .string(GenericContent.title(for: n.type)), "body": .string(GenericContent.body(for: n)),
                ]
            }
        }
        if pushType == .background {
            aps["content-available"] = 1
        } else {
            switch n.ios["sound"] {
            case nil: aps["sound"] = "default"
            case .null: break
            case .string(let s): aps["sound"] = .string(s)
            case .object(let o): aps["sound"] = .object(o)
            default: throw APNsPayloadError("ios.sound must be a string or a critical-sound object")
            }
            if let badge = request.effectiveBadge { aps["badge"] = .number(Double(badge)) }
            if let thread = n.collapseTag, !thread.isEmpty { aps["thread-id"] = .string(thread) }
            if !n.actions.isEmpty {
                switch n.ios["category"] {
                case nil, .null: aps["category"] = .string(n.type)
                case .string(let c): aps["category"] = .string(c)
                default: throw APNsPayloadError("ios.category must be a string")
                }
            }
            aps["mutable-content"] = 1
        }
        top["aps"] = .object(aps)
        top[CloudPayload.notificationIdKey] = .string(n.id)
        return .object(top)
    }

    /// The `apns-id` for a delivery: its id as a canonical lower-case UUID (8-4-4-4-12, 32 lower-case
    /// hex digits), the form Apple documents; APNs answers 400 `BadMessageId` to anything else. A
    /// delivery id that is not a UUID is mapped to a stable name-based one (SHA-256, RFC 9562
    /// version 8), so retries keep the id.
    public static func apnsID(for deliveryId: String) -> String {
        // A canonical UUID (8-4-4-4-12 hex digits, what `UUID(uuidString:)` accepts) is lower-cased
        // byte by byte, without Foundation's sscanf-based parse.
        if let lower = lowercasedUUID(deliveryId) { return lower }
        var b = Array(SHA256.hash(Array(deliveryId.utf8)).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x80
        b[8] = (b[8] & 0x3F) | 0x80
        return UUIDGenerator.format(b)
    }

    /// `text` lower-cased when it is a UUID in canonical form (either case), else nil.
    static func lowercasedUUID(_ text: String) -> String? {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (i, byte) in utf8.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                out.append(byte)
                continue
            }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): out.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): out.append(byte + 0x20)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
