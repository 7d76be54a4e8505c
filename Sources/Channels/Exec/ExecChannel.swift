import ChannelAPI
import Foundation
import HeraldProcess
import HeraldSync

/// `type: exec`: a channel written in any language, run as a long-lived child process that speaks
/// newline-delimited JSON on stdin and stdout (protocol version 1, docs/exec-channels.md); its
/// stderr goes to Herald's log, line by line, scrubbed of secrets.
///
/// ```yaml
/// matrix:
///   type: exec
///   platforms: [matrix]                 # required; the plugin's handshake must declare the same
///   command: [python3, matrix.py]       # run in the config file's directory
///   timeout: 30s                        # per batch
///   config:                             # handed to the plugin in the handshake
///     homeserver: https://matrix.example.org
///     access-token: ${MATRIX_TOKEN}
/// ```
///
/// The plugin is started at the first use (or when `herald serve` starts its channels) and
/// restarted with exponential backoff (1 s to 60 s, on the injected clock) after it dies. A batch
/// in flight when it died, a batch that timed out, and a batch refused because too many are in
/// flight are answered `retry`: the next attempt carries the same delivery ids.
public final class ExecChannel: Channel {
    /// What the channel was configured with.
    struct Setup: Sendable {
        var name: String
        var command: [String]
        var directory: String?
        var platforms: [String]
        /// The `config:` mapping as JSON (scalars as strings).
        var config: JSONValue
        /// Values under `config:` keys named like secrets.
        var configSecrets: [String]
        var limits = ExecLimits()
    }

    /// Whether the plugin can be used now.
    enum Readiness: Sendable {
        case ready(ExecConnection, ExecHandshake)
        case unavailable(String, retryAfter: Duration?)
    }

    private struct State {
        var connection: ExecConnection?
        var handshake: ExecHandshake?
        var starting: Task<Readiness, Never>?
        var backoff = ExecBackoff()
        var closed = false
        /// Values of the `config:` keys the handshake declared secret.
        var declaredSecrets: [String] = []
    }

    let setup: Setup
    private let clock: any HeraldClock
    private let logger: ChannelLogger
    private let state = Locked(State())

    init(setup: Setup, clock: any HeraldClock, logger: ChannelLogger) {
        self.setup = setup
        self.clock = clock
        self.logger = logger.withSecrets(setup.configSecrets)
    }

    /// The config secrets, and the values of the config keys the handshake declared secret.
    public var secrets: [String] { setup.configSecrets + state.withLock { $0.declaredSecrets } }

    /// The handshake's secret fields of `platform`, nil until the plugin has answered one.
    public func secretDeviceFields(of platform: String) -> Set<String>? {
        state.withLock { $0.handshake }.map { $0.secretFields(of: platform) }
    }

    /// The running plugin's process id (nil when none runs), for tests and diagnostics.
    var pid: Int32? { state.withLock { $0.connection?.process.pid } }

    /// How many batches wait for the running plugin's answers (for tests).
    var batchesInFlight: Int { state.withLock { $0.connection }?.batchesInFlight ?? 0 }

    // MARK: Channel

    /// Sends the batch to the plugin and matches its answers to the targets.
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        let targets = request.targets
        guard !targets.isEmpty else { return [] }
        let (connection, handshake): (ExecConnection, ExecHandshake)
        switch await ready() {
        case .ready(let c, let h): (connection, handshake) = (c, h)
        case .unavailable(let reason, let after): return ExecBatch.retryAll(targets, reason: reason, retryAfter: after)
        }
        var deviceSecrets: [String] = []
        for t in targets {
            if let d = t.device {
                deviceSecrets += d.secretValues(extraSecretFields: handshake.secretFields(of: d.platform))
            }
        }
        let reply = await connection.request(timeout: setup.limits.timeout, batch: true, secrets: deviceSecrets) { id in
            ExecProtocol.deliver(id: id, request: request)
        }
        let results: [DeliveryResult]
        switch reply {
        case .answered(let answer):
            state.withLock { $0.backoff.succeeded() }
            if let e = answer.error {
                results = ExecBatch.retryAll(targets, reason: "exec plugin answered an error: \(e.message)")
            } else {
                let batch = ExecBatch(result: answer.result ?? .null, targets: targets)
                for p in batch.problems { connection.refuse(p) }
                results = batch.results
            }
        case .timedOut:
            results = ExecBatch.retryAll(
                targets, reason: "exec plugin timed out after \(Self.seconds(setup.limits.timeout))")
        case .ended(let how):
            results = ExecBatch.retryAll(targets, reason: "\(how) with the batch in flight")
        case .busy(let n):
            results = ExecBatch.retryAll(targets, reason: "exec plugin busy: \(n) batches in flight")
        }
        return scrubbed(results, targets: targets, handshake: handshake)
    }

    /// Asks the plugin to check (and normalise) the registration.
    public func validateRegistration(_ device: Device) async throws(ValidationError) -> Device {
        guard case .ready(let connection, _) = await ready() else {
            throw ValidationError(
                field: "platform", "channel \(setup.name) cannot check registrations now (see the log)")
        }
        let reply = await connection.request(timeout: setup.limits.timeout) { id in
            ExecProtocol.validate(id: id, device: device)
        }
        guard case .answered(let answer) = reply else {
            throw ValidationError(field: "platform", "channel \(setup.name) did not answer the registration check")
        }
        if let e = answer.error {
            throw ValidationError(field: e.field ?? "device", Redaction.scrub(e.message, secrets: secrets))
        }
        guard let json = answer.result?["device"], !json.isNull else { return device }
        var checked = device
        checked.fields = try Device(json: json).fields
        return checked
    }

    /// Starts the plugin (`herald serve` calls this when it starts), so a start error shows at once.
    public func receive(into sink: ChannelEventSink) async { _ = await ready() }

    /// Asks the plugin to exit: `shutdown`, stdin closed, then `SIGTERM` and `SIGKILL` after
    /// ``ExecLimits/grace`` each. Waits until it has been reaped.
    public func shutdown() async {
        let (connection, starting) = state.withLock { s in
            s.closed = true
            return (s.connection, s.starting)
        }
        starting?.cancel()
        var all = [connection].compactMap { $0 }
        if case .ready(let c, _) = await starting?.value, c !== connection { all.append(c) }
        for c in all { await stop(c) }
    }

    // MARK: Starting and stopping

    /// The running plugin, started if none runs and the backoff allows it.
    func ready() async -> Readiness {
        let now = clock.now()
        let next = state.withLock { s -> Result<Readiness, ExecStart> in
            if s.closed { return .success(.unavailable("channel \(setup.name) is shut down", retryAfter: nil)) }
            if let c = s.connection, let h = s.handshake, c.ended == nil { return .success(.ready(c, h)) }
            if let t = s.starting { return .failure(ExecStart(task: t)) }
            if let wait = s.backoff.wait(at: now) {
                return .success(
                    .unavailable(
                        "exec plugin is down; restarting in \(Self.seconds(wait)) (failure \(s.backoff.failures))",
                        retryAfter: wait))
            }
            let t = Task { await self.start() }
            s.starting = t
            return .failure(ExecStart(task: t))
        }
        switch next {
        case .success(let r): return r
        case .failure(let start): return await start.task.value
        }
    }

    private struct ExecStart: Error {
        let task: Task<Readiness, Never>
    }

    /// Spawns the plugin and runs the handshake.
    private func start() async -> Readiness {
        let outcome = await launch()
        let now = clock.now()
        switch outcome {
        case .success(let (c, h)):
            let declared = h.secretConfigKeys.compactMap { setup.config[$0]?.stringValue }.filter { !$0.isEmpty }
            c.addSecrets(setup.configSecrets + declared)
            let closed = state.withLock { s in
                s.starting = nil
                guard !s.closed else { return true }
                s.connection = c
                s.handshake = h
                s.declaredSecrets = declared
                return false
            }
            if closed {
                await stop(c)
                return .unavailable("channel \(setup.name) is shut down", retryAfter: nil)
            }
            logger.info("exec plugin started", ["pid": String(c.process.pid)])
            return .ready(c, h)
        case .failure(let problem):
            let wait = state.withLock { s in
                s.starting = nil
                s.backoff.failed(at: now)
                return s.backoff.wait(at: now)
            }
            let reason = "exec plugin did not start: \(problem.message)"
            logger.error(reason, ["command": setup.command.joined(separator: " ")])
            return .unavailable(reason, retryAfter: wait)
        }
    }

    private func launch() async -> Result<(ExecConnection, ExecHandshake), ExecProtocolError> {
        let process: ChildProcess
        do {
            process = try ChildProcess.spawn(setup.command, environment: nil, directory: setup.directory)
        } catch {
            return .failure(ExecProtocolError(code: .handshake, message: error.message))
        }
        let connection = ExecConnection(process: process, logger: logger, limits: setup.limits) { [weak self] c, how in
            self?.ended(c, how)
        }
        connection.addSecrets(setup.configSecrets)
        let keys = setup.config.objectValue.map { Array($0.keys).sorted() } ?? []
        let reply = await connection.request(timeout: setup.limits.handshakeTimeout) { [setup] id in
            ExecProtocol.handshake(id: id, channel: setup.name, platforms: setup.platforms, config: setup.config)
        }
        let result: Result<ExecHandshake, ExecProtocolError>
        switch reply {
        case .answered(let a):
            if let e = a.error {
                result = .failure(
                    ExecProtocolError(code: .handshake, message: "the plugin refused the handshake: \(e.message)"))
            } else {
                result = ExecProtocol.handshake(a.result ?? .null, platforms: setup.platforms, configKeys: keys)
            }
        case .timedOut:
            result = .failure(
                ExecProtocolError(
                    code: .handshake,
                    message: "no handshake answer within \(Self.seconds(setup.limits.handshakeTimeout))"))
        case .ended(let how):
            result = .failure(ExecProtocolError(code: .handshake, message: "\(how) before the handshake answer"))
        case .busy: result = .failure(ExecProtocolError(code: .handshake, message: "busy"))
        }
        switch result {
        case .success(let h): return .success((connection, h))
        case .failure(let e):
            await stop(connection)
            return .failure(e)
        }
    }

    /// The plugin `c` ended by itself: the next use restarts it after the backoff.
    private func ended(_ c: ExecConnection, _ how: String) {
        let now = clock.now()
        let current = state.withLock { s -> Bool in
            guard s.connection === c, !s.closed else { return false }
            s.connection = nil
            s.handshake = nil
            s.backoff.failed(at: now)
            return true
        }
        if current { logger.error("\(how); it is restarted at the next use, after a backoff") }
    }

    /// A channel released without ``shutdown()`` (the graph of a config that a reload replaced, once
    /// its deliveries finished) stops its plugin in the background the same way.
    deinit {
        guard let c = state.withLock({ $0.connection }) else { return }
        let grace = setup.limits.grace
        Task.detached { await ExecChannel.stop(c, grace: grace) }
    }

    private func stop(_ c: ExecConnection) async { await Self.stop(c, grace: setup.limits.grace) }

    /// `shutdown`, stdin closed, then `SIGTERM` and `SIGKILL` `grace` apart, until `c` has ended.
    private static func stop(_ c: ExecConnection, grace: Duration) async {
        if c.ended == nil {
            _ = await c.request(timeout: grace) { id in ExecProtocol.shutdown(id: id) }
            c.closeInput()
        }
        for step in 0..<3 where c.ended == nil {
            let until = ContinuousClock.now.advanced(by: grace)
            while c.ended == nil, ContinuousClock.now < until { try? await Task.sleep(for: .milliseconds(10)) }
            if c.ended == nil, step < 2 { c.process.terminate(forcibly: step == 1) }
        }
    }

    // MARK: Helpers

    /// `results` with the config secrets and each target device's secret values (the common
    /// fields and the handshake's `secretFields`) scrubbed from reasons, details and provider ids.
    private func scrubbed(_ results: [DeliveryResult], targets: [DeliveryTarget], handshake: ExecHandshake)
        -> [DeliveryResult]
    {
        guard results.contains(where: { $0.reason != nil || !$0.details.isEmpty || $0.providerMessageId != nil })
        else { return results }
        let common = secrets
        return zip(results, targets).map { r, t in
            guard r.reason != nil || !r.details.isEmpty || r.providerMessageId != nil else { return r }
            let device = t.device.map { $0.secretValues(extraSecretFields: handshake.secretFields(of: $0.platform)) }
            let all = (common + (device ?? [])).sorted { $0.utf8.count > $1.utf8.count }
            return Redaction.scrub(r, secrets: all)
        }
    }

    static func seconds(_ d: Duration) -> String {
        let ms = d.milliseconds
        return ms % 1000 == 0 ? "\(ms / 1000)s" : String(format: "%.3gs", Double(ms) / 1000)
    }
}
