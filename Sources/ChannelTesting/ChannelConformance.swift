import ChannelAPI
import Foundation

/// Checks a channel module against the rules of the contract (docs/channels.md), over an
/// in-process ``ScriptedTransport``:
///
/// 1. one result per target, carrying the target's `deliveryId` (and its device);
/// 2. no throw: the factory builds the channel from the given config, and `deliver` answers every
///    scripted answer (including transport errors) with results;
/// 3. an idempotency key on every request, the same on every retry of a delivery (unless
///    ``idempotencyKey`` is nil: the provider has none);
/// 4. `dead` only for answers the channel's own table calls permanent (``deadAnswers``);
/// 5. no configured secret (config values under secret names, ``Channel/secrets``, the devices'
///    secret fields, including those their platform's descriptor declares, ``secrets``) in anything
///    the channel logged;
/// 6. `retry` for the transient answers (429, 5xx, timeouts, refused connections), unless the
///    channel's table lists them in ``deadAnswers``;
/// 7. a `Retry-After` the provider sent (in seconds) is the result's ``DeliveryResult/retryAfter``.
///
/// ```swift
/// @Test func ntfyConforms() async throws {
///     let check = ChannelConformance(
///         factory: NtfyChannel.factory, config: "server: https://ntfy.example/\ntoken: tk_secret",
///         devices: [Device(deviceId: "p", platform: "ntfy", fields: ["topic": "alerts"])])
///     let violations = await check.run()
///     #expect(violations.isEmpty, "\(violations)")
/// }
/// ```
public struct ChannelConformance: Sendable {
    /// One scripted provider answer: a response or a transport error.
    public struct ScriptedAnswer: Sendable, CustomStringConvertible {
        /// A name for reports.
        public var name: String
        /// The answer.
        public var result: Result<HTTPResponse, HTTPError>

        /// An answer with `status`, `body` and `headers`.
        public static func status(_ status: Int, _ body: String = "", headers: [HTTPHeader] = []) -> ScriptedAnswer {
            ScriptedAnswer(
                name: "\(status) \(body)",
                result: .success(HTTPResponse(status: status, headers: headers, body: Array(body.utf8))))
        }

        /// A transport error.
        public static func error(_ code: HTTPError.Code) -> ScriptedAnswer {
            ScriptedAnswer(
                name: "error \(code.rawValue)", result: .failure(HTTPError(code, "scripted \(code.rawValue)")))
        }

        /// Creates an answer.
        public init(name: String, result: Result<HTTPResponse, HTTPError>) {
            self.name = name
            self.result = result
        }

        /// The name.
        public var description: String { name }
    }

    /// What to change for each rule, for people (`herald channels check` prints it under a violation).
    public static let fixes: [String: String] = [
        "one-result-per-target":
            "return exactly one DeliveryResult per target, made from the target (.delivered(target), .retry(target, …)), so it carries its deliveryId and device",
        "no-throw": "the factory must accept the config it documents; deliver must turn every failure into a result",
        "idempotency-key":
            "send the target's deliveryId as the provider's idempotency key (a header such as idempotency-key, or a field in the body), the same on every attempt",
        "dead-only-permanent":
            "answer dead only for the provider's \"token is gone\" answers (list them as deadAnswers / --dead STATUS); anything else is retry or failed",
        "no-secret-logged":
            "never log device secret fields or credentials; give the logger your secrets with withSecrets(_:)",
        "retry-transient":
            "answer retry for 429, 5xx, timeouts and connection failures: they say nothing about the device",
        "retry-after":
            "pass the provider's Retry-After on as the result's retryAfter (RetryAfter.parse(response, now:))",
    ]

    /// A broken rule.
    public struct Violation: Error, Sendable, CustomStringConvertible, Equatable {
        /// Which rule (`one-result-per-target`, `no-throw`, `idempotency-key`, `dead-only-permanent`,
        /// `no-secret-logged`, `retry-transient`, `retry-after`).
        public var rule: String
        /// What happened.
        public var message: String

        /// `rule: message`.
        public var description: String { "\(rule): \(message)" }
    }

    /// The answers every channel is checked against: success, the common client and server errors
    /// (with and without `Retry-After`) and transport failures.
    public static let standardAnswers: [ScriptedAnswer] = [
        .status(200, "{}"), .status(201, "{}"), .status(400, #"{"error":"bad"}"#), .status(401, "{}"),
        .status(403, "{}"), .status(404, "{}"), .status(413, "{}"),
        .status(429, "{}", headers: [HTTPHeader("retry-after", "7")]),
        .status(500, "oops"), .status(502, "<html>bad gateway</html>"),
        .status(503, "{}", headers: [HTTPHeader("retry-after", "3")]), .error(.timeout), .error(.connectFailed),
        .error(.tls), .error(.blockedAddress), .error(.transport),
    ]

    /// The factory under test.
    public var factory: ChannelFactory
    /// The channel's config mapping as YAML (without `type:`).
    public var config: String
    /// Environment for `${VAR}` in the config.
    public var environment: [String: String]
    /// Directory relative paths in the config resolve against.
    public var baseDirectory: String
    /// The channel's `allow-hosts:`.
    public var allowHosts: [String]
    /// The devices to deliver to (none for a sink channel: one target without a device).
    public var devices: [Device]
    /// The notification to deliver.
    public var notification: HeraldNotification
    /// The answers checked (``standardAnswers`` unless given).
    public var answers: [ScriptedAnswer]
    /// Answers the channel's own table calls permanent for the device: the only ones that may
    /// give `dead` (matched by name: listing `.status(404, "{}")` moves it out of ``answers``).
    public var deadAnswers: [ScriptedAnswer]
    /// Answers for requests outside the scenario (a token endpoint), by request; nil lets the
    /// scenario answer.
    public var fixed: @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>?
    /// The idempotency key a request carries, if any (default: the `apns-id`, `idempotency-key` or
    /// `webhook-id` header). nil declares that the provider has no idempotency key (Telegram's Bot API):
    /// then only rule 3's "the same on a retry" is moot.
    public var idempotencyKey: (@Sendable (HTTPRequest) -> String?)?
    /// Further secret values that must never be logged.
    public var secrets: [String]
    /// Builds the channel's config instead of reading ``config`` as YAML: `herald channels check`
    /// passes the channel's node from the operator's config file. nil reads ``config``.
    public var makeConfig: (@Sendable () throws -> ChannelConfig)?

    /// Creates a check.
    public init(
        factory: ChannelFactory, config: String, environment: [String: String] = [:],
        baseDirectory: String = FileManager.default.currentDirectoryPath, allowHosts: [String] = [],
        devices: [Device],
        notification: HeraldNotification = HeraldNotification(title: "Hello", body: "World"),
        answers: [ScriptedAnswer] = ChannelConformance.standardAnswers, deadAnswers: [ScriptedAnswer] = [],
        fixed: @escaping @Sendable (HTTPRequest) -> Result<HTTPResponse, HTTPError>? = { _ in nil },
        idempotencyKey: (@Sendable (HTTPRequest) -> String?)? = ChannelConformance.headerIdempotencyKey,
        secrets: [String] = []
    ) {
        self.factory = factory
        self.config = config
        self.environment = environment
        self.baseDirectory = baseDirectory
        self.allowHosts = allowHosts
        self.devices = devices
        self.notification = notification
        self.answers = answers
        self.deadAnswers = deadAnswers
        self.fixed = fixed
        self.idempotencyKey = idempotencyKey
        self.secrets = secrets
    }

    /// The `apns-id`, `idempotency-key` or `webhook-id` header of `request`.
    public static let headerIdempotencyKey: @Sendable (HTTPRequest) -> String? = { request in
        request.headers.first { ["apns-id", "idempotency-key", "webhook-id"].contains($0.name.lowercased()) }?.value
    }

    /// The answers that must give `retry` (rule 6): rate limiting, server errors and transport failures
    /// that say nothing about the device.
    public static let transientAnswerNames: Set<String> = Set(
        [
            ScriptedAnswer.status(429, "{}", headers: [HTTPHeader("retry-after", "7")]), .status(500, "oops"),
            .status(502, "<html>bad gateway</html>"), .status(503, "{}", headers: [HTTPHeader("retry-after", "3")]),
            .error(.timeout), .error(.connectFailed), .error(.transport),
        ].map(\.name))

    /// Runs every answer (and, for the first answer that asks for a retry, a second attempt of the
    /// same deliveries) and returns every broken rule; empty when the channel conforms.
    public func run() async -> [Violation] {
        var violations: [Violation] = []
        var checkedRetry = false
        var reportedKeyless = false
        let permanentNames = Set(deadAnswers.map(\.name))
        let all = answers.filter { !permanentNames.contains($0.name) } + deadAnswers
        for (n, scripted) in all.enumerated() {
            let permanent = permanentNames.contains(scripted.name)
            let transport = ScriptedTransport(fixed: fixed) { _ in scripted.result }
            let logs = RecordingLogSink()
            let built: (channel: any Channel, secrets: [String])
            switch make(transport, logs) {
            case .success(let b): built = b
            case .failure(let v): return [v]
            }
            let targets =
                devices.isEmpty
                ? [DeliveryTarget(device: nil, deliveryId: "conformance-\(n)-sink")]
                : devices.enumerated().map { i, d in DeliveryTarget(device: d, deliveryId: "conformance-\(n)-\(i)") }
            let request = DeliveryRequest(notification: notification, targets: targets)
            let results = await built.channel.deliver(request)
            violations += Self.checkResults(results, targets: targets, answer: scripted)
            if !permanent, let dead = results.first(where: { $0.outcome == .dead }) {
                violations.append(
                    Violation(
                        rule: "dead-only-permanent",
                        message: "answer \(scripted) gave dead (\(dead.reason ?? "")) but is not in deadAnswers"))
            }
            // Rules 3 (presence) and 6–7 are about what the provider answered: only for a channel that asked it.
            let scenario = transport.requests.filter { fixed($0) == nil }
            if !scenario.isEmpty {
                violations += Self.checkRetryRules(results, answer: scripted, permanent: permanent)
            }
            if let idempotencyKey, !reportedKeyless,
                let keyless = scenario.first(where: { (idempotencyKey($0) ?? "").isEmpty })
            {
                // Once per run; the URL by its host only (a path can carry a credential, as the Bot API's does).
                reportedKeyless = true
                violations.append(
                    Violation(
                        rule: "idempotency-key",
                        message:
                            "a request to \(Self.host(of: keyless.url)) carried no idempotency key (first after answer \(scripted))"
                    ))
            }
            if !checkedRetry, let idempotencyKey, results.contains(where: { $0.outcome == .retry }) {
                checkedRetry = true
                let first = transport.requests.compactMap(idempotencyKey)
                transport.reset()
                let again = DeliveryRequest(
                    notification: notification,
                    targets: targets.map { DeliveryTarget(device: $0.device, deliveryId: $0.deliveryId, attempt: 2) })
                let retried = await built.channel.deliver(again)
                violations += Self.checkResults(retried, targets: again.targets, answer: scripted)
                let second = transport.requests.compactMap(idempotencyKey)
                if first.sorted() != second.sorted() {
                    violations.append(
                        Violation(
                            rule: "idempotency-key",
                            message: "the retry carried keys \(second.sorted()), the first attempt \(first.sorted())"))
                }
            }
            let secretValues = (built.secrets + built.channel.secrets + secrets + deviceSecrets)
                .filter { $0.count >= 4 }
            let logged = logs.text
            for s in Set(secretValues) where logged.contains(s) {
                violations.append(
                    Violation(
                        rule: "no-secret-logged",
                        message: "a secret (\(Redaction.mask(s))) was logged after answer \(scripted)"))
            }
            await built.channel.shutdown()
        }
        return violations
    }

    /// `scheme://host/…` of `url`: what a report may show of it.
    static func host(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return "…" }
        let rest = url[scheme.upperBound...]
        return url[..<scheme.upperBound] + (rest.split(separator: "/", maxSplits: 1).first.map(String.init) ?? "")
            + "/…"
    }

    /// The devices' secret values: the common secret fields and those their platform's descriptor
    /// (declared by ``factory``) lists.
    var deviceSecrets: [String] {
        devices.flatMap { device in
            let declared = factory.platforms.first { $0.name == device.platform }?.secretFields ?? []
            return device.secretValues(extraSecretFields: declared)
        }
    }

    /// Rules 6 and 7: a transient answer gives `retry`, with the provider's `Retry-After`.
    static func checkRetryRules(_ results: [DeliveryResult], answer: ScriptedAnswer, permanent: Bool) -> [Violation] {
        guard !permanent, transientAnswerNames.contains(answer.name) else { return [] }
        var out: [Violation] = []
        // A `dead` is rule 4's to report.
        if let wrong = results.first(where: { $0.outcome != .retry && $0.outcome != .dead }) {
            out.append(
                Violation(
                    rule: "retry-transient",
                    message:
                        "answer \(answer) gave \(wrong.outcome.rawValue) (\(wrong.reason ?? "")): a rate limit, a server error or a timeout says nothing about the device; answer retry"
                ))
        }
        if case .success(let response) = answer.result, let header = response.header("retry-after"),
            let seconds = Int(header)
        {
            for r in results where r.outcome == .retry && r.retryAfter != .seconds(seconds) {
                out.append(
                    Violation(
                        rule: "retry-after",
                        message:
                            "answer \(answer) carried Retry-After: \(seconds) but the result's retryAfter is \(r.retryAfter.map { "\($0)" } ?? "nil"); pass it on (RetryAfter.parse)"
                    ))
                break
            }
        }
        return out
    }

    /// Builds the channel from ``config`` on `transport`, as the router does.
    func make(_ transport: ScriptedTransport, _ logs: RecordingLogSink) -> Result<
        (channel: any Channel, secrets: [String]), Violation
    > {
        do throws(any Error) {
            let channelConfig =
                try makeConfig?()
                ?? TestConfig.channel(
                    config, name: factory.type, file: "conformance.yaml", environment: environment,
                    baseDirectory: baseDirectory, allowHosts: allowHosts)
            let clock = ManualClock()
            let context = ChannelContext(
                name: factory.type, http: transport, clock: clock, random: FixedRandom(),
                logger: ChannelLogger(source: factory.type, sink: logs, clock: clock), state: InMemoryChannelState())
            let channel = try factory.make(channelConfig, context)
            try channelConfig.finish()
            return .success((channel, channelConfig.secrets))
        } catch {
            return .failure(Violation(rule: "no-throw", message: "the factory refused the config: \(error)"))
        }
    }

    /// Rule 1: one result per target, each with its target's delivery id and device.
    static func checkResults(_ results: [DeliveryResult], targets: [DeliveryTarget], answer: ScriptedAnswer)
        -> [Violation]
    {
        var out: [Violation] = []
        if results.count != targets.count {
            out.append(
                Violation(
                    rule: "one-result-per-target",
                    message: "\(results.count) results for \(targets.count) targets after answer \(answer)"))
        }
        let byId = Dictionary(grouping: results, by: \.deliveryId)
        for t in targets {
            guard let mine = byId[t.deliveryId], mine.count == 1, let r = mine.first else {
                out.append(
                    Violation(
                        rule: "one-result-per-target",
                        message:
                            "\(byId[t.deliveryId]?.count ?? 0) results carry deliveryId \(t.deliveryId) after answer \(answer)"
                    ))
                continue
            }
            if r.deviceId != t.device?.deviceId {
                out.append(
                    Violation(
                        rule: "one-result-per-target",
                        message: "the result for \(t.deliveryId) names device \(r.deviceId ?? "nil")"))
            }
        }
        return out
    }
}
