import ChannelAPI
import Foundation

/// A deliberately broken HTTP channel for the conformance kit's own tests: each flag breaks one
/// rule of docs/channels.md ("Conformance"). Type `broken`, platform `brokenphone` (secret field
/// `appToken`); the YAML key `breaks:` lists the flags by name, so `herald channels check` can be
/// run against each break from a config file.
public struct BrokenChannel: Channel {
    /// One way to break the rules.
    public enum Break: String, Sendable, CaseIterable {
        /// Returns no result for the second target (`one-result-per-target`).
        case dropsSecond = "drops-second"
        /// A fresh idempotency key on every attempt (`idempotency-key`).
        case randomKey = "random-key"
        /// `dead` on a 500 (`dead-only-permanent`).
        case deadOn500 = "dead-on-500"
        /// Logs its config token (`no-secret-logged`).
        case logsToken = "logs-token"
        /// Logs the device's `appToken`, a secret only the descriptor declares (`no-secret-logged`).
        case logsDeviceSecret = "logs-device-secret"
        /// `failed` on 429, 5xx and timeouts (`retry-transient`).
        case neverRetries = "never-retries"
        /// Sends no idempotency key (`idempotency-key`).
        case noKey = "no-key"
        /// Drops the provider's `Retry-After` (`retry-after`).
        case ignoresRetryAfter = "ignores-retry-after"
    }

    /// The breaks in force.
    public var breaks: Set<Break>
    let token: String
    let http: any HTTPTransport
    let logger: ChannelLogger

    /// Sends one request per target to `https://broken.example/` and maps the answer, breaking
    /// the rules its flags name.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        var out: [DeliveryResult] = []
        for (i, target) in request.targets.enumerated() {
            if breaks.contains(.dropsSecond), i == 1 { continue }
            let key = breaks.contains(.randomKey) ? UUID().uuidString : target.deliveryId
            if breaks.contains(.logsToken) { logger.info("sending with \(token)") }
            if breaks.contains(.logsDeviceSecret), let app = target.device?.string("appToken") {
                logger.info("app \(app)")
            }
            let headers = breaks.contains(.noKey) ? [] : [HTTPHeader("idempotency-key", key)]
            let answer = await http.send(
                all: [HTTPRequest(url: "https://broken.example/", headers: headers)], maxInFlight: 1)
            let never = breaks.contains(.neverRetries)
            switch answer.first {
            case .success(let r) where r.status < 300: out.append(.delivered(target, status: r.status))
            case .success(let r) where r.status == 500 && breaks.contains(.deadOn500):
                out.append(.dead(target, status: 500, reason: "x"))
            case .success(let r) where never: out.append(.failed(target, status: r.status, reason: "no"))
            case .success(let r):
                let after =
                    breaks.contains(.ignoresRetryAfter)
                    ? nil : r.header("retry-after").flatMap { Int($0) }.map { Duration.seconds($0) }
                out.append(.retry(target, status: r.status, reason: "answered \(r.status)", retryAfter: after))
            default: out.append(never ? .failed(target, reason: "no") : .retry(target, reason: "no answer"))
            }
        }
        return out
    }

    /// The factory with the breaks `configure` sets on top of the config's `breaks:`.
    public static func factory(_ configure: @escaping @Sendable (inout Set<Break>) -> Void = { _ in }) -> ChannelFactory
    {
        ChannelFactory(
            type: "broken", defaultPlatforms: ["brokenphone"],
            platforms: [
                PlatformDescriptor(
                    name: "brokenphone", secretFields: ["appToken"], address: { $0.string("token") },
                    validate: { _ throws(ValidationError) in })
            ]
        ) { config, context throws(ConfigError) in
            var breaks: Set<Break> = []
            for name in try config.stringList("breaks") ?? [] {
                guard let b = Break(rawValue: name) else {
                    throw config.error(
                        at: "breaks",
                        " unknown break \(name) (one of \(Break.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                breaks.insert(b)
            }
            configure(&breaks)
            return BrokenChannel(
                breaks: breaks, token: try config.requiredString("token"), http: context.http, logger: context.logger)
        }
    }
}
