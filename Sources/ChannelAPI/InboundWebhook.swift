/// An HTTP request that `herald serve` received for one channel at
/// `POST /v1/channels/{name}/{kind}` (a provider's webhook, such as Telegram's updates).
public struct InboundWebhook: Sendable, Equatable {
    /// The last path segment (`telegram` for `/v1/channels/bot/telegram`); a channel answers
    /// ``InboundWebhookAnswer/notFound`` for a kind it does not serve.
    public var kind: String
    /// The request headers, names in lower case.
    public var headers: [String: String]
    /// The raw request body.
    public var body: [UInt8]

    /// Creates a request.
    public init(kind: String, headers: [String: String], body: [UInt8]) {
        self.kind = kind
        self.headers = headers
        self.body = body
    }
}

/// How a channel answered an ``InboundWebhook``; the server maps it to an HTTP status.
public enum InboundWebhookAnswer: Sendable, Equatable {
    /// Handled (200). Events it carried were recorded through the sink.
    case accepted
    /// The request's secret did not match (401). Nothing was recorded.
    case unauthorized
    /// The body could not be understood (422), with a reason that names no secret.
    case invalid(String)
    /// This channel takes no webhook of this kind (404).
    case notFound
}

extension Channel {
    /// Takes no webhooks: answers ``InboundWebhookAnswer/notFound``.
    public func receiveWebhook(_ request: InboundWebhook, into sink: ChannelEventSink) async -> InboundWebhookAnswer {
        .notFound
    }
}
