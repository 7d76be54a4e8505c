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
        // Longest first, so that a secret containing another is replaced whole. The channel's own
        // secrets are ordered once per call; each result's device secrets (a few) are merged in.
        let common = Self.longestFirst(configSecrets + inner.secrets)
        var byDevice: [String: [String]] = [:]
        for t in request.targets {
            if let d = t.device { byDevice[d.deviceId, default: []] += registry.secretValues(of: d) }
        }
        return results.map { r in
            guard r.reason != nil || !r.details.isEmpty || r.providerMessageId != nil else { return r }
            let device = r.deviceId.flatMap { byDevice[$0] } ?? []
            return Redaction.scrub(r, secrets: Self.merging(device, into: common))
        }
    }

    /// `secrets` longest first, equal lengths in their given order. Lengths are UTF-8 byte counts
    /// (constant time): a secret containing another is longer in bytes as in characters.
    static func longestFirst(_ secrets: [String]) -> [(length: Int, secret: String)] {
        secrets.map { (length: $0.utf8.count, secret: $0) }.enumerated()
            .sorted {
                $0.element.length != $1.element.length ? $0.element.length > $1.element.length : $0.offset < $1.offset
            }
            .map(\.element)
    }

    /// `extra` merged into `ordered` (longest first), each extra after the ordered secrets of its
    /// length: the order `(ordered + extra)` sorted longest first, stably, would have.
    static func merging(_ extra: [String], into ordered: [(length: Int, secret: String)]) -> [String] {
        guard !extra.isEmpty else { return ordered.map(\.secret) }
        var all = ordered
        for (length, secret) in longestFirst(extra) {
            let at = all.firstIndex { $0.length < length } ?? all.endIndex
            all.insert((length, secret), at: at)
        }
        return all.map(\.secret)
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
