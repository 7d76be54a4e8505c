import ChannelAPI
import ChannelSupport

extension APNsChannel: PreparedPushSending {
    /// Sends a payload a relay client composed (Herald serving a relay protocol), unchanged, with the
    /// channel's topic and provider token; answers are classified as for the channel's own pushes.
    public func deliver(prepared push: PreparedPush, to targets: [DeliveryTarget]) async -> [DeliveryResult] {
        let type = APNsPushType(rawValue: push.pushType) ?? .alert
        let collapse = push.collapseID.map { CollapseID.truncate($0, maxBytes: 64) }.flatMap { $0.isEmpty ? nil : $0 }
        let prepared = APNsPreparedNotification(
            pushType: type, topic: configuration.topic + type.topicSuffix, priority: push.priority,
            expiration: push.expiration, collapseID: collapse, activityPushToken: nil, plainBody: push.payload,
            hapiPlaintext: nil)
        return await send(prepared, to: targets)
    }
}
