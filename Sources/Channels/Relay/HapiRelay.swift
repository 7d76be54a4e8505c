import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto

/// `protocol: hapi`: hapi's push relay (`POST {url}/v1/push`), which holds the APNs key and
/// forwards an end-to-end encrypted hapi-v1 envelope to the device.
///
/// Request body: `{"platform":"ios","token":<hex>,"envelope":<base64>,"collapseId":<tag>,"priority":10|5}`
/// (`collapseId` omitted when the notification has no collapse tag; priority 5 for `priority: low`).
struct HapiRelay: Sendable {
    /// The relay base URL (no trailing slash).
    let url: String
    let context: ChannelContext

    /// The largest envelope the relay accepts (base64 characters).
    static let maxEnvelopeCharacters = 3200

    /// A hapi request that cannot be built.
    struct BuildError: Error, Equatable {
        let reason: String
    }

    /// The device's 32-byte pushKey (base64), or nil.
    static func pushKey(_ device: Device) -> [UInt8]? {
        guard let s = device.string("pushKey"), let key = try? Base64.decode(s), key.count == 32 else { return nil }
        return key
    }

    /// The `/v1/push` body for one device (pure; `nonce` is 12 bytes).
    static func body(
        notification: HeraldNotification, token: String, pushKey: [UInt8], nonce: [UInt8]
    ) throws(BuildError) -> [UInt8] {
        let envelope: String
        do {
            envelope = try HapiPayload.envelope(
                plaintext: HapiPayload.plaintext(for: notification), key: pushKey, nonce: nonce)
        } catch {
            throw BuildError(reason: "cannot build the hapi-v1 envelope: \(error.message)")
        }
        guard envelope.count <= maxEnvelopeCharacters else {
            throw BuildError(
                reason:
                    "hapi-v1 envelope is \(envelope.count) characters, over the relay's \(maxEnvelopeCharacters) limit"
            )
        }
        var object: [String: JSONValue] = [
            "platform": "ios", "token": .string(token.lowercased()), "envelope": .string(envelope),
            "priority": .number(notification.priority == .low ? 5 : 10),
        ]
        if let collapse = notification.collapseTag { object["collapseId"] = .string(collapse) }
        return JSONValue.object(object).canonicalBytes
    }

    /// Maps the relay's answer to an outcome (pure).
    static func classify(_ target: DeliveryTarget, status: Int, body: [UInt8], retryAfter: Duration?)
        -> DeliveryResult
    {
        let reason = RelaySupport.reason(status: status, body: body)
        switch status {
        case 200..<300: return .delivered(target, status: status)
        case 410: return .dead(target, status: status, reason: reason)
        case 501: return .failed(target, status: status, reason: reason)
        case 429, 500...599:
            return .retry(target, status: status, reason: reason, retryAfter: retryAfter)
        default: return .failed(target, status: status, reason: reason)
        }
    }

    /// Refuses an `ios` device without a 32-byte pushKey.
    static func validate(_ device: Device) throws(ValidationError) -> Device {
        guard device.string("pushKey") != nil else {
            throw ValidationError(field: "pushKey", "required by the hapi relay: base64 of exactly 32 bytes")
        }
        guard pushKey(device) != nil else {
            throw ValidationError(field: "pushKey", "must be base64 of exactly 32 bytes")
        }
        return device
    }

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        await ConcurrentMap.map(request.targets, limit: 64) { target in
            await self.send(request.notification, to: target)
        }
    }

    private func send(_ notification: HeraldNotification, to target: DeliveryTarget) async -> DeliveryResult {
        guard let device = target.device, let token = device.token else {
            return .failed(target, reason: "device has no token")
        }
        guard let key = HapiRelay.pushKey(device) else {
            return .failed(target, reason: "device has no 32-byte pushKey (required by the hapi relay)")
        }
        let body: [UInt8]
        do {
            body = try HapiRelay.body(
                notification: notification, token: token, pushKey: key, nonce: context.random.bytes(12))
        } catch {
            return .failed(target, reason: error.reason)
        }
        let http = HTTPRequest(
            url: url + "/v1/push", headers: [HTTPHeader("content-type", "application/json")], body: body)
        do {
            let response = try await context.http.send(http)
            let result = HapiRelay.classify(
                target, status: response.status, body: response.body,
                retryAfter: RetryAfter.parse(response, now: context.clock.now()))
            if result.outcome != .delivered {
                context.logger.info(
                    "hapi relay did not deliver", ["device": device.deviceId, "reason": result.reason ?? ""])
            }
            return result
        } catch {
            return .retry(target, reason: RelaySupport.transportReason(error))
        }
    }
}
