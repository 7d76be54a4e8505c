import ChannelAPI

/// What `herald serve` needs from a router beyond the embedding API: the CLI's JSON encoders (so
/// the HTTP API speaks the same vocabulary) and the hand-off of inbound webhooks to channels.
extension Router {
    /// A device as `herald devices list --format json` prints it: the registration with its secret
    /// fields redacted, the channels that serve it, and why none does (`unreachable`) when so.
    /// Fields a serving channel declares secret (an exec plugin's handshake) are redacted too; when
    /// such a channel cannot say yet, every field but the identity is.
    public func listingJSON(of device: Device) -> JSONValue {
        let reach = reach(of: device)
        var extra = registry.platform(device.platform)?.secretFields ?? []
        var unknown = false
        for name in reach.channels {
            guard let declared = channel(named: name)?.secretDeviceFields(of: device.platform) else {
                unknown = true
                continue
            }
            extra.formUnion(declared)
        }
        if unknown { extra.formUnion(device.fields.keys) }
        var o = device.redactedJSON(extraSecretFields: extra).objectValue ?? [:]
        o["channels"] = .array(reach.channels.map { .string($0) })
        if let why = reach.unreachableReason { o["unreachable"] = .string(why) }
        return .object(o)
    }

    /// A device from its registration JSON (contract §3), validated by its platform's descriptor;
    /// ``ValidationError`` names the field.
    public func device(json: JSONValue) throws(ValidationError) -> Device { try registry.device(json: json) }

    /// Nil when the store takes writes as far as this process knows; otherwise why not, in words fit
    /// for an answer (``StoreHealth``). While a write failure is remembered, a probe write
    /// (``probeStoreWrite()``) runs at most once per ``StoreHealth/probeInterval`` on the router's
    /// clock: when it commits, the failure is forgotten.
    public func checkStoreWrites() -> String? {
        guard let failure = storeHealth.failure else { return nil }
        guard storeHealth.takeProbe(now: clock.now()) else { return failure.reason }
        do {
            try probeStoreWrite()
            storeHealth.noteSuccess()
            logger.info("the store takes writes again", [:])
            return nil
        } catch {
            let reason = StoreHealth.unavailableReason(of: error) ?? failure.reason
            storeHealth.noteFailure(reason, at: clock.now())
            logger.warning("the store still refuses writes", ["error": "\(error)"])
            return reason
        }
    }

    /// Bytes the write probe stores: a write the size of a small send's rows, so a probe on a disk
    /// with no room for one fails.
    public static let probeBytes = 16 << 10

    /// Writes ``probeBytes`` to the channel state `herald.health` (key `probe`) and removes them, in
    /// two committed writes; throws what the store throws.
    public func probeStoreWrite() throws {
        let state = store.channelState("herald.health")
        try state.setValue([UInt8](repeating: 0x2A, count: Router.probeBytes), forKey: "probe")
        try state.setValue(nil, forKey: "probe")
    }

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
