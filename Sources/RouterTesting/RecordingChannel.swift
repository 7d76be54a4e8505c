import ChannelAPI
import HeraldSync

/// A channel that records every request and answers from a script: the fake to route through in
/// router tests and in a channel author's own tests.
///
/// ```swift
/// let recorder = RecordingChannel()
/// recorder.answer { target, _ in .delivered(target) }           // the default
/// var registry = ChannelRegistry([recorder.factory(type: "recording", platforms: ["phone"])])
/// ```
public final class RecordingChannel: Channel {
    /// How to answer one target.
    public typealias Answer = @Sendable (DeliveryTarget, DeliveryRequest) -> DeliveryResult

    private let state = Locked<(requests: [DeliveryRequest], answer: Answer, delay: Duration?)>(
        ([], { target, _ in .delivered(target) }, nil))

    /// A recorder that delivers everything.
    public init() {}

    /// Sets how targets are answered.
    public func answer(_ answer: @escaping Answer) { state.withLock { $0.answer = answer } }

    /// Makes every delivery take `delay` (to test timeouts).
    public func delay(_ delay: Duration?) { state.withLock { $0.delay = delay } }

    /// Every request so far.
    public var requests: [DeliveryRequest] { state.withLock { $0.requests } }

    /// Every target delivered to so far, in order.
    public var targets: [DeliveryTarget] { requests.flatMap(\.targets) }

    /// Forgets recorded requests.
    public func reset() { state.withLock { $0.requests = [] } }

    /// Records the request and answers each target.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let (answer, delay) = state.withLock { s in
            s.requests.append(request)
            return (s.answer, s.delay)
        }
        if let delay {
            try? await Task.sleep(for: delay)
            if Task.isCancelled { return [] }
        }
        return request.targets.map { answer($0, request) }
    }

    /// A factory that hands out this instance under `type`, serving `platforms` (empty = sink).
    public func factory(type: String = "recording", platforms: [String] = ["phone", "wear", "ios", "web", "telegram"])
        -> ChannelFactory
    {
        ChannelFactory(type: type, defaultPlatforms: platforms) { config, _ throws(ConfigError) in
            _ = config.node("note")
            return self
        }
    }
}
