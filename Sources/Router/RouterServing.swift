import ChannelAPI

/// What `herald serve` needs from a router beyond the embedding API: the CLI's JSON encoders (so
/// the HTTP API speaks the same vocabulary) and the hand-off of inbound webhooks to channels.
extension Router {
    /// A device as `herald devices list --format json` prints it: the registration with its secret
    /// fields redacted, the channels that serve it, and why none does (`unreachable`) when so.
    public func listingJSON(of device: Device) -> JSONValue {
        var o = registry.redactedJSON(of: device).objectValue ?? [:]
        let reach = reach(of: device)
        o["channels"] = .array(reach.channels.map { .string($0) })
        if let why = reach.unreachableReason { o["unreachable"] = .string(why) }
        return .object(o)
    }

    /// A device from its registration JSON (contract §3), validated by its platform's descriptor;
    /// ``ValidationError`` names the field.
    public func device(json: JSONValue) throws(ValidationError) -> Device { try registry.device(json: json) }

    /// Hands an inbound webhook to the channel named `channel`; events it carries are recorded as
    /// inbound channel events are. Nil when no such channel is configured.
    public func receiveWebhook(channel name: String, _ request: InboundWebhook) async -> InboundWebhookAnswer? {
        guard let channel = currentGraph.channels[name] else { return nil }
        return await channel.receiveWebhook(request, into: RouterEventSink(router: self))
    }
}

extension RegistrationResult {
    /// One entry of `herald devices register --format json`: the device's key, whether it was
    /// created, the registrations it moved, its serving channels and the warnings.
    public func json(for device: Device) -> JSONValue {
        .object([
            "namespace": .string(device.namespace), "deviceId": .string(device.deviceId),
            "platform": .string(device.platform), "created": .bool(created), "moved": .array(moved.map { .string($0) }),
            "channels": .array(channels.map { .string($0) }),
            "warnings": .array(warnings.map { .string($0.description) }),
        ])
    }
}
