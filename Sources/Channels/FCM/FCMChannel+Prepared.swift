import ChannelAPI
import ChannelSupport

extension FCMChannel: PreparedPushSending {
    /// FCM: the payload is an HTTP v1 `message` object without `token`.
    public var preparedKind: PreparedPushKind { .fcm }

    /// Sends a `message` a relay composed (Herald serving a relay protocol) to each target's token,
    /// unchanged but for `token`; answers are classified as for the channel's own sends (one request
    /// per target, a 401 refreshes the access token once).
    public func deliver(prepared push: PreparedPush, to targets: [DeliveryTarget]) async -> [DeliveryResult] {
        var results: [DeliveryResult] = []
        var ready: [(DeliveryTarget, [UInt8])] = []
        for target in targets {
            guard let token = target.device?.token, !token.isEmpty else {
                results.append(.failed(target, reason: "device has no FCM token"))
                continue
            }
            var message = push.payload.objectValue ?? [:]
            message["token"] = .string(token)
            ready.append((target, JSONValue.object(["message": .object(message)]).canonicalBytes))
        }
        guard !ready.isEmpty else { return results }
        switch await tokens.token() {
        case .success(let access): return results + (await send(ready, token: access))
        case .failure(let e): return results + ready.map { FCMChannel.result(for: e, $0.0) }
        }
    }
}
