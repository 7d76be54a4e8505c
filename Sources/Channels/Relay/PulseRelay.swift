import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto

/// `protocol: pulse`: Live Activities through Pulse Relay,
/// `POST {current-relay}/v1/devices/{relayDeviceId}/push`, signed with the device's pushKey.
struct PulseRelay: Sendable {
    /// The relay every push goes to.
    static let defaultCurrentRelay = "https://relay.crsyounen.com"
    /// Relays a device may have registered with (the second is legacy, served by the current one).
    static let defaultAllowedRelays = ["https://relay.crsyounen.com", "https://pulse-relay.crsyounen.workers.dev"]

    /// Normalised allowed relay URLs.
    let allowedRelays: [String]
    /// Normalised current relay URL.
    let currentRelay: String
    let context: ChannelContext

    /// Lower-cases and strips a trailing slash so URLs compare.
    static func normalise(_ url: String) -> String {
        var u = url.trimmingCharacters(in: .whitespaces)
        while u.hasSuffix("/") { u.removeLast() }
        return u.lowercased()
    }

    static func isPathSafe(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 256
            && s.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._~-".unicodeScalars.contains($0))
            }
    }

    func validate(_ device: Device) throws(ValidationError) -> Device {
        guard let relay = device.string("relay"), allowedRelays.contains(Self.normalise(relay)) else {
            throw ValidationError(
                field: "relay",
                "relay is not in this channel's allowed-relays (\(allowedRelays.joined(separator: ", ")))")
        }
        guard let id = device.string("relayDeviceId"), Self.isPathSafe(id) else {
            throw ValidationError(field: "relayDeviceId", "must be 1-256 characters of A-Z a-z 0-9 . _ ~ -")
        }
        guard let source = device.string("sourceId"), !source.isEmpty, source.utf8.count <= 256,
            source.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { throw ValidationError(field: "sourceId", "must be 1-256 printable ASCII characters without spaces") }
        guard Self.pushKey(device) != nil else {
            throw ValidationError(field: "pushKey", "must be base64url of exactly 32 bytes")
        }
        return device
    }

    static func pushKey(_ device: Device) -> [UInt8]? {
        guard let s = device.string("pushKey"), let k = try? Base64.urlDecode(s), k.count == 32 else { return nil }
        return k
    }

    /// The next revision for `ref`: at least `proposed`, strictly above the stored one.
    func nextRevision(ref: String, proposed: Int64) -> Int64 {
        let key = "pulse.revision.\(ref)"
        let value = try? context.state.update(key) { old -> ([UInt8]?, Int64) in
            let last = old.flatMap { Int64(String(decoding: $0, as: UTF8.self)) } ?? -1
            let (above, overflow) = last.addingReportingOverflow(1)
            let next = max(proposed, overflow ? last : above)
            return (Array(String(next).utf8), next)
        }
        return value ?? proposed
    }

    /// Applies the budgets for one push atomically in the state store.
    func reserve(device: Device, event: String, ref: String, hasAlert: Bool) -> PulseLimits.Decision {
        let key = "pulse.limits.\(device.string("relayDeviceId") ?? "")|\(device.string("sourceId") ?? "")"
        let now = context.clock.now().millisecondsSince1970
        let decision = try? context.state.update(key) { old -> ([UInt8]?, PulseLimits.Decision) in
            let doc = old.flatMap { try? JSONValue.parse($0) }
            let (next, decision) = PulseLimits.reserve(doc, event: event, ref: ref, hasAlert: hasAlert, now: now)
            return (next.canonicalBytes, decision)
        }
        // A store failure must not lift the limits silently: wait a second and try again.
        return decision ?? .wait(.seconds(1))
    }

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let activity: PulseLiveActivity
        do { activity = try PulseLiveActivity(request.notification, now: context.clock.now()) } catch {
            return request.targets.map { .failed($0, reason: error.reason) }
        }
        let revision = nextRevision(
            ref: activity.ref, proposed: activity.requestedRevision ?? context.clock.now().millisecondsSince1970)
        let notification = request.notification
        return await ConcurrentMap.map(request.targets, limit: 32) { target in
            await self.send(activity, revision: revision, notification: notification, to: target)
        }
    }

    private func send(
        _ initial: PulseLiveActivity, revision initialRevision: Int64, notification: HeraldNotification,
        to target: DeliveryTarget
    ) async -> DeliveryResult {
        guard let device = target.device, let key = Self.pushKey(device), let id = device.string("relayDeviceId"),
            let source = device.string("sourceId")
        else { return .failed(target, reason: "pulse device lacks relayDeviceId, sourceId or a 32-byte pushKey") }
        guard let relay = device.string("relay"), allowedRelays.contains(Self.normalise(relay)) else {
            return .failed(target, reason: "device relay is not in allowed-relays")
        }
        let url = currentRelay + "/v1/devices/" + id + "/push"
        let path = URLComponents(string: url)?.percentEncodedPath ?? "/v1/devices/\(id)/push"
        var activity = initial
        var revision = initialRevision
        var triedStart = activity.event == "start"
        var raisedRevision = false
        while true {
            let decision = reserve(
                device: device, event: activity.event, ref: activity.ref, hasAlert: activity.alert != nil)
            guard case .send(let dropAlert) = decision else {
                if case .wait(let d) = decision {
                    return .retry(target, reason: "pulse client-side rate limit (\(activity.event))", retryAfter: d)
                }
                return .retry(target, reason: "pulse client-side rate limit")
            }
            let body = activity.body(revision: revision, dropAlert: dropAlert)
            let seconds = context.clock.now().secondsSince1970
            let auth = PulseAuth.header(
                key: key, path: path, seconds: seconds, requestId: UUIDGenerator.make(random: context.random),
                body: body)
            let response: HTTPResponse
            do {
                response = try await context.http.send(
                    HTTPRequest(
                        url: url,
                        headers: [
                            HTTPHeader("content-type", "application/json"), HTTPHeader("x-pulse-source", source),
                            HTTPHeader("x-pulse-auth", auth),
                        ], body: body))
            } catch {
                return .retry(target, reason: RelaySupport.transportReason(error))
            }
            let status = response.status
            let reason = RelaySupport.reason(status: status, body: response.body)
            switch status {
            case 200..<300:
                // The relay drops an alert over its own limit and says so with "alertDropped": true.
                let relayDropped = (try? JSONValue.parse(response.body))?["alertDropped"]?.boolValue == true
                let dropped = activity.alert != nil && (dropAlert || relayDropped)
                return .delivered(
                    target, status: status,
                    details: ["alertDropped": dropped ? "true" : "false", "revision": String(revision)])
            case 401, 403, 410:
                return .dead(target, status: status, reason: reason)
            case 404 where activity.event == "update" && !triedStart:
                // No activity for this ref on the phone (dismissed, or never started): start it.
                triedStart = true
                do { activity = try activity.asStart(notification) } catch {
                    return .failed(target, status: status, reason: "\(reason); cannot restart: \(error.reason)")
                }
                continue
            case 404:
                // An end for an activity that is gone has nothing left to do; never start one to end it.
                return .failed(target, status: status, reason: "\(reason) (no Live Activity for ref \(activity.ref))")
            case 409 where !raisedRevision:
                raisedRevision = true
                revision = nextRevision(ref: activity.ref, proposed: revision < .max ? revision + 1 : revision)
                continue
            case 409, 429, 500...599:
                return .retry(
                    target, status: status, reason: reason,
                    retryAfter: RetryAfter.parse(response, now: context.clock.now()))
            default:
                return .failed(target, status: status, reason: reason)
            }
        }
    }
}
