import ChannelAPI
import Foundation
import HeraldHTTP

/// `protocol: home-assistant`: POSTs what Home Assistant's `notify.mobile_app_*` posts to the
/// device's `pushUrl` (a mobile_app push forwarder):
/// `{message, title?, data?, push_token, registration_info{app_id, app_version, os_version, webhook_id?}}`.
struct HomeAssistantRelay: Sendable {
    let allowHosts: [String]
    let context: ChannelContext

    func validate(_ device: Device) throws(ValidationError) -> Device {
        guard let url = device.string("pushUrl") else { throw ValidationError(field: "pushUrl", "required https URL") }
        try URLPolicy.check(url, field: "pushUrl", allowHosts: allowHosts)
        guard device.token?.isEmpty == false else { throw ValidationError(field: "token", "required") }
        return device
    }

    /// The forwarder body (pure). `data` carries the notification's data plus `url`, `tag` and
    /// `actions` (`[{action, title, uri?, destructive?}]`) in HA's schema.
    static func body(_ n: ChannelAPI.Notification, device: Device) -> [UInt8] {
        var o: [String: JSONValue] = [
            "message": .string(n.body ?? n.title ?? ""), "push_token": .string(device.token ?? ""),
        ]
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
        let info = device.fields["registrationInfo"]?.objectValue ?? [:]
        var reg: [String: JSONValue] = [:]
        for (from, to) in [("appId", "app_id"), ("appVersion", "app_version"), ("osVersion", "os_version")] {
            if let v = info[from]?.stringValue { reg[to] = .string(v) }
        }
        if let w = info["webhookId"]?.stringValue { reg["webhook_id"] = .string(w) }
        o["registration_info"] = .object(reg)
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
            if let resets = json?["rateLimits"]?["resetsAt"]?.stringValue {
                let f = ISO8601DateFormatter()
                f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                if let d = f.date(from: resets) ?? ISO8601DateFormatter().date(from: resets) {
                    after = .milliseconds(Int64(max(0, d.timeIntervalSince(now)) * 1000))
                }
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
        return await RelaySupport.forEachConcurrently(request.targets, limit: 32) { target in
            await self.send(notification, to: target)
        }
    }

    private func send(_ notification: ChannelAPI.Notification, to target: DeliveryTarget) async -> DeliveryResult {
        guard let device = target.device, let url = device.string("pushUrl") else {
            return .failed(target, reason: "device has no pushUrl")
        }
        do { try URLPolicy.check(url, field: "pushUrl", allowHosts: allowHosts) } catch {
            return .failed(target, reason: error.description)
        }
        let body = HomeAssistantRelay.body(notification, device: device)
        do {
            let response = try await context.http.send(
                HTTPRequest(
                    url: url, headers: [HTTPHeader("content-type", "application/json")], body: body,
                    timeout: .seconds(10)))
            let now = context.clock.now()
            return HomeAssistantRelay.classify(
                target, status: response.status, body: response.body, now: now,
                retryAfter: RelaySupport.retryAfter(response, now: now))
        } catch {
            return .retry(target, reason: RelaySupport.transportReason(error))
        }
    }
}
