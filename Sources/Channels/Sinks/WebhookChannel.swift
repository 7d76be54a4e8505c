import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto

/// `type: webhook`: a sink that POSTs the notification JSON, signed with Standard Webhooks headers.
///
/// ```yaml
/// audit:
///   type: webhook
///   url: https://example.com/hooks/notify
///   secret: ${AUDIT_WEBHOOK_SECRET}     # whsec_<base64>
/// ```
///
/// Headers: `webhook-id` (``webhookID(for:)``: `msg_` + the delivery id, stable across retries),
/// `webhook-timestamp` (unix
/// seconds), `webhook-signature: v1,<base64 HMAC-SHA256(secret, "id.timestamp.body")>`.
/// Answers: 2xx → delivered, 429/5xx/transport errors → retry, other 4xx → failed.
public struct WebhookChannel: Channel {
    /// The receiver URL.
    public let url: String
    let key: [UInt8]
    let http: any HTTPTransport
    let clock: any HeraldClock
    let logger: ChannelLogger

    /// The factory registered under `webhook`.
    public static let factory = ChannelFactory(type: "webhook", defaultPlatforms: []) {
        config, context throws(ConfigError) in
        let url = try config.requiredString("url")
        guard url.hasPrefix("https://") || url.hasPrefix("http://") || config.isUnresolved("url") else {
            throw config.error(at: "url", "url must be an http(s) URL")
        }
        let secret = try config.requiredString("secret")
        // A dry run with the secret's variable unset cannot check it.
        if config.isUnresolved("secret") { return DryRunChannel(name: config.name) }
        let key: [UInt8]
        do {
            key = try WebhookChannel.decodeSecret(secret)
        } catch {
            throw config.error(
                at: "secret", "secret must be whsec_<base64> (Standard Webhooks) or base64 of at least 16 bytes")
        }
        return WebhookChannel(
            url: url, key: key, http: context.http, clock: context.clock, logger: context.logger.withSecrets([secret]))
    }

    /// Decodes a `whsec_<base64>` secret (the prefix is optional).
    public static func decodeSecret(_ secret: String) throws -> [UInt8] {
        let body = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        let key = try Base64.decode(body)
        guard key.count >= 16 else {
            throw CryptoError(code: .invalidKey, message: "webhook secret shorter than 16 bytes")
        }
        return key
    }

    /// The `webhook-signature` value for a message.
    public static func signature(key: [UInt8], id: String, timestamp: Int64, body: [UInt8]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return "v1," + Base64.encode(HMACSHA256.authenticationCode(key: key, message: signed))
    }

    /// The `webhook-id` for a delivery: `msg_` + the delivery id, the same on every retry (Standard
    /// Webhooks: the id is unique per message, kept across retries, and must not contain `.`, the
    /// separator of the signed `id.timestamp.body`). A delivery id that is not 1-128 characters of
    /// `[A-Za-z0-9_-]` is replaced by the lower-case hex of the first 16 bytes of its SHA-256.
    public static func webhookID(for deliveryId: String) -> String {
        let safe =
            !deliveryId.isEmpty && deliveryId.utf8.count <= 128
            && deliveryId.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2D
                    || c == 0x5F
            }
        if safe { return "msg_" + deliveryId }
        let digest = SHA256.hash(Array(deliveryId.utf8)).prefix(16)
        return "msg_" + Hex.encode(digest)
    }

    /// Posts the notification.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let target = request.targets.first ?? DeliveryTarget(device: nil, deliveryId: UUID().uuidString.lowercased())
        var payload = request.notification.json.objectValue ?? [:]
        if let badge = request.effectiveBadge { payload["badge"] = .number(Double(badge)) }
        let body = JSONValue.object(payload).canonicalBytes
        let timestamp = clock.now().secondsSince1970
        let id = WebhookChannel.webhookID(for: target.deliveryId)
        let headers = [
            HTTPHeader("content-type", "application/json"), HTTPHeader("webhook-id", id),
            HTTPHeader("webhook-timestamp", String(timestamp)),
            HTTPHeader(
                "webhook-signature", WebhookChannel.signature(key: key, id: id, timestamp: timestamp, body: body)),
        ]
        do {
            let response = try await http.send(HTTPRequest(method: "POST", url: url, headers: headers, body: body))
            switch response.status {
            case 200..<300:
                return [.delivered(target, status: response.status)]
            case 429, 500...599:
                let after = RetryAfter.parse(response, now: clock.now())
                return [
                    .retry(
                        target, status: response.status, reason: "receiver answered \(response.status)",
                        retryAfter: after)
                ]
            default:
                let text = String(decoding: response.body.prefix(200), as: UTF8.self)
                return [
                    .failed(target, status: response.status, reason: "receiver answered \(response.status): \(text)")
                ]
            }
        } catch {
            return [.retry(target, reason: "\(error.code.rawValue): \(error.message)")]
        }
    }
}
