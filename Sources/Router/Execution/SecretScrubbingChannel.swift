import ChannelAPI

/// The choke point that keeps secrets out of delivery results: wraps every configured channel so that
/// the reason, details and provider id of each result are scrubbed of the channel's config secrets
/// (``ChannelConfig/secrets``), the secrets the channel itself reports (``Channel/secrets``) and the
/// secret fields of the target's device (common and its platform's, ``PlatformDescriptor/secretFields``), before the executor stores, reports or emits them.
///
/// A provider or proxy may echo the request (a Bot API URL with its token, a header, a device's push
/// key) in an error page; that text becomes the delivery reason, which `send` prints, `history` lists
/// and the store keeps.
struct SecretScrubbingChannel: Channel {
    /// The configured channel.
    let inner: any Channel
    /// Secret values read from the channel's config.
    let configSecrets: [String]
    /// The platforms' descriptors, for each device's secret field names.
    let registry: ChannelRegistry

    func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let results = await inner.deliver(request)
        guard results.contains(where: { $0.reason != nil || !$0.details.isEmpty || $0.providerMessageId != nil })
        else { return results }
        let common = configSecrets + inner.secrets
        var byDevice: [String: [String]] = [:]
        for t in request.targets {
            if let d = t.device { byDevice[d.deviceId, default: []] += registry.secretValues(of: d) }
        }
        return results.map { r in
            guard r.reason != nil || !r.details.isEmpty || r.providerMessageId != nil else { return r }
            let device = r.deviceId.flatMap { byDevice[$0] } ?? []
            // Longest first, so that a secret containing another is replaced whole.
            let secrets = (common + device).sorted { $0.count > $1.count }
            return Redaction.scrub(r, secrets: secrets)
        }
    }

    func validateRegistration(_ device: Device) async throws(ValidationError) -> Device {
        try await inner.validateRegistration(device)
    }

    func didRegister(_ device: Device) async { await inner.didRegister(device) }

    func receive(into sink: ChannelEventSink) async { await inner.receive(into: sink) }
    func receiveWebhook(_ request: InboundWebhook, into sink: ChannelEventSink) async -> InboundWebhookAnswer {
        await inner.receiveWebhook(request, into: sink)
    }

    func shutdown() async { await inner.shutdown() }

    var secrets: [String] { configSecrets + inner.secrets }
}
