import ChannelAPI
import ChannelSupport

/// `type: local`: delivers straight to apps that hold an open stream to `herald serve`
/// (`GET /v1/devices/{deviceId}/stream`) and waits for each app to confirm (`received`).
///
/// A device with no open stream fails at once (`not connected`), one that does not confirm within
/// `confirm` fails `not confirmed`, and one whose stream closes first fails `stream closed`: a route
/// `deliver: [local, fcm]` with `mode: first` then falls through to the cloud.
///
/// ```yaml
/// local:
///   type: local
///   platforms: [phone, ios]   # the default
///   confirm: 10s              # the default
/// ```
public struct LocalChannel: Channel {
    /// How long a push waits for the app's confirmation.
    public let confirm: Duration
    let streams: (any LocalStreams)?

    /// The default confirm window (Home Assistant's `PUSH_CONFIRM_TIMEOUT`).
    public static let defaultConfirm: Duration = .seconds(10)
    /// The longest confirm window (below the channel's default `timeout` of 30 s).
    public static let longestConfirm: Duration = .seconds(25)

    /// The factory registered under `local`: it serves `phone` and `ios` unless `platforms:` says.
    public static let factory = ChannelFactory(type: "local", defaultPlatforms: ["phone", "ios"]) {
        config, context throws(ConfigError) in
        let confirm = try config.duration("confirm") ?? defaultConfirm
        guard confirm >= .milliseconds(1), confirm <= longestConfirm else {
            throw config.error(at: "confirm", "confirm must be from 1ms to 25s (below the channel's timeout)")
        }
        return LocalChannel(confirm: confirm, streams: context.localStreams)
    }

    /// A channel over `streams` (nil: nothing holds streams, every device is `not connected`).
    public init(confirm: Duration = LocalChannel.defaultConfirm, streams: (any LocalStreams)?) {
        self.confirm = confirm
        self.streams = streams
    }

    /// Pushes to every target's stream at once and waits for the confirmations.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let notification = request.notification
        let badge = request.effectiveBadge
        return await withTaskGroup(of: DeliveryResult.self) { group in
            for target in request.targets {
                group.addTask {
                    guard let device = target.device else {
                        return .failed(target, reason: "the local channel delivers to devices only")
                    }
                    guard let streams else { return .failed(target, reason: LocalPushOutcome.notConnected.rawValue) }
                    let push = LocalPush(
                        namespace: device.namespace, deviceId: device.deviceId, platform: device.platform,
                        notificationId: notification.id, deliveryId: target.deliveryId,
                        payload: LocalChannel.payload(
                            notification, deliveryId: target.deliveryId, platform: device.platform, badge: badge))
                    let outcome = await streams.push(push, confirmWithin: confirm)
                    return outcome == .confirmed
                        ? .delivered(target, details: ["confirmed": "local"])
                        : .failed(target, reason: outcome.rawValue)
                }
            }
            var results: [DeliveryResult] = []
            for await r in group { results.append(r) }
            return results
        }
    }

    /// The event an app reads from its stream: the notification's id (the one FCM and APNs carry,
    /// so a cloud duplicate can be dropped), the delivery id, the data map FCM would carry
    /// (`heraldDeliveryId` included) and the notification as sent.
    public static func payload(
        _ notification: HeraldNotification, deliveryId: String, platform: String, badge: Int? = nil
    ) -> JSONValue {
        var data = notification.data
        for (k, v) in HapiPayload.data(for: notification) { data[k] = v }
        data["heraldDeliveryId"] = deliveryId
        var o: [String: JSONValue] = [
            "id": .string(notification.id), "deliveryId": .string(deliveryId), "platform": .string(platform),
            "namespace": .string(notification.namespace),
            "data": .object(data.mapValues { .string($0) }), "notification": notification.json,
        ]
        if let badge { o["badge"] = .number(Double(badge)) }
        return .object(o)
    }
}
