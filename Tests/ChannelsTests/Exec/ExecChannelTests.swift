import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import ExecChannel

/// The exec channel against real child processes (`Scripts/exec_plugin.py MODE`): death mid-batch,
/// garbage on stdout, timeouts, restarts and secrets. No test asserts a wall-clock bound: the
/// backoff runs on a ``ManualClock`` and timeouts are checked by their reasons.
@Suite struct ExecChannelTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Scripts/exec_plugin.py").path

    static func channel(
        _ mode: String, clock: ManualClock = ManualClock(), logs: RecordingLogSink, config: JSONValue = [:],
        configSecrets: [String] = [], limits: (inout ExecLimits) -> Void = { _ in }
    ) -> ExecChannel {
        var setup = ExecChannel.Setup(
            name: "gotify", command: ["python3", script, mode], directory: nil, platforms: ["gotify"],
            config: config, configSecrets: configSecrets)
        limits(&setup.limits)
        return ExecChannel(
            setup: setup, clock: clock, logger: ChannelLogger(source: "gotify", sink: logs, clock: clock))
    }

    static func targets(_ n: Int, attempt: Int = 1, token: String = "tok-0123456789") -> [DeliveryTarget] {
        (0..<n).map { i in
            DeliveryTarget(
                device: Device(deviceId: "d\(i)", platform: "gotify", fields: ["appToken": .string("\(token)-\(i)")]),
                deliveryId: "del-\(i)", attempt: attempt)
        }
    }

    static func request(_ targets: [DeliveryTarget]) -> DeliveryRequest {
        DeliveryRequest(notification: HeraldNotification(title: "t"), targets: targets)
    }

    @Test func deliversABatchAndShutsDown() async throws {
        let logs = RecordingLogSink()
        let c = Self.channel("ok", logs: logs)
        let results = await c.deliver(Self.request(Self.targets(5)))
        #expect(results.map(\.outcome) == Array(repeating: .delivered, count: 5))
        #expect(results.map(\.deliveryId) == Self.targets(5).map(\.deliveryId))
        #expect(results.map(\.deviceId) == Self.targets(5).map(\.device?.deviceId))
        await c.shutdown()
        let after = await c.deliver(Self.request(Self.targets(1)))
        #expect(after.first?.reason == "channel gotify is shut down")
    }

    /// Killed mid-batch: every delivery in flight comes back `retry` (none lost), the plugin is
    /// restarted after its backoff, and the retry of the same delivery ids is delivered.
    @Test func pluginKilledMidBatchLosesNothingAndRestartsAfterBackoff() async throws {
        let logs = RecordingLogSink()
        let clock = ManualClock()
        let c = Self.channel("die", clock: clock, logs: logs)
        let first = Self.targets(20)
        let results = await c.deliver(Self.request(first))
        #expect(results.map(\.deliveryId) == first.map(\.deliveryId))
        #expect(results.allSatisfy { $0.outcome == .retry })
        #expect(results[0].reason == "exec plugin killed by signal 9 with the batch in flight")
        // Within the backoff: not restarted; answered retry with the time left.
        let waiting = await c.deliver(Self.request(Self.targets(2, attempt: 2)))
        #expect(waiting.allSatisfy { $0.outcome == .retry && $0.retryAfter == .seconds(1) })
        #expect(waiting[0].reason?.hasPrefix("exec plugin is down; restarting in 1s") == true)
        clock.advance(by: .seconds(1))
        let retried = await c.deliver(Self.request(Self.targets(20, attempt: 2)))
        #expect(retried.map(\.deliveryId) == first.map(\.deliveryId))
        #expect(retried.allSatisfy { $0.outcome == .delivered })
        #expect(logs.text.contains("exec plugin killed by signal 9; it is restarted at the next use"))
        await c.shutdown()
    }

    @Test func garbageOnStdoutIsRefusedAndLoggedOtherResultsStillMatch() async throws {
        let logs = RecordingLogSink()
        let c = Self.channel("garbage", logs: logs)
        let targets = Self.targets(3)
        let results = await c.deliver(Self.request(targets))
        #expect(results.map(\.deliveryId) == targets.map(\.deliveryId))
        #expect(results.map(\.outcome) == [.delivered, .delivered, .retry])
        #expect(results[2].reason == ExecBatch.missingReason)
        let problems = logs.all.compactMap { $0.fields["problem"] }
        #expect(
            problems.sorted() == [
                "not-json", "unknown-delivery", "unknown-delivery", "unknown-id", "wrong-shape", "wrong-shape",
            ])
        #expect(logs.text.contains("a result for delivery not-in-batch, which is not in the batch"))
        // Still running and still matching.
        let again = await c.deliver(Self.request(Self.targets(1)))
        #expect(again.map(\.outcome) == [.delivered])
        await c.shutdown()
    }

    @Test func aBatchWithoutAnswerTimesOutAsRetry() async throws {
        let logs = RecordingLogSink()
        let c = Self.channel("silent", logs: logs) { $0.timeout = .milliseconds(300) }
        let timedOut = await c.deliver(Self.request(Self.targets(2)))
        #expect(timedOut.map(\.outcome) == [.retry, .retry])
        #expect(timedOut[0].reason == "exec plugin timed out after 0.3s")
        // A late answer would be refused as an unknown id; the plugin keeps running.
        #expect(c.pid != nil)
        await c.shutdown()
    }

    /// At most `maxBatches` in flight: one more is answered `retry` at once; shutting down answers
    /// the one in flight `retry` too.
    @Test func batchesBeyondTheLimitAreRefusedAsBusy() async throws {
        let logs = RecordingLogSink()
        let c = Self.channel("silent", logs: logs) {
            $0.timeout = .seconds(600)
            $0.maxBatches = 1
            $0.grace = .milliseconds(200)
        }
        let slow = Task { await c.deliver(Self.request(Self.targets(2))) }
        while c.batchesInFlight < 1 { try await Task.sleep(for: .milliseconds(5)) }
        let busy = await c.deliver(Self.request(Self.targets(1)))
        #expect(busy.first?.reason == "exec plugin busy: 1 batches in flight")
        await c.shutdown()
        let ended = await slow.value
        #expect(ended.allSatisfy { $0.outcome == .retry })
    }

    @Test func startErrorsAreClearAndBackedOff() async throws {
        let logs = RecordingLogSink()
        let clock = ManualClock()
        let c = Self.channel("wrong-platform", clock: clock, logs: logs)
        let r = await c.deliver(Self.request(Self.targets(1)))
        #expect(r[0].outcome == .retry)
        #expect(
            r[0].reason
                == "exec plugin did not start: the plugin declares platforms [other] but the config lists platforms: [gotify]; they must be the same"
        )
        #expect(r[0].retryAfter == .seconds(1))
        #expect(logs.all.contains { $0.level == .error && $0.message == r[0].reason })
        let crash = Self.channel("crash-start", clock: clock, logs: logs)
        let r2 = await crash.deliver(Self.request(Self.targets(1)))
        #expect(
            r2[0].reason == "exec plugin did not start: exec plugin exited with status 3 before the handshake answer")
        let missing = ExecChannel(
            setup: ExecChannel.Setup(
                name: "m", command: ["/nonexistent/plugin"], directory: nil, platforms: ["gotify"], config: [:],
                configSecrets: []), clock: clock, logger: ChannelLogger(source: "m", sink: logs))
        let r3 = await missing.deliver(Self.request(Self.targets(1)))
        #expect(r3[0].reason?.hasPrefix("exec plugin did not start: cannot start /nonexistent/plugin") == true)
        await c.shutdown()
        await crash.shutdown()
    }

    /// The handshake's secret device fields, the config's secret-named keys and the keys the
    /// handshake declared secret are scrubbed from stored reasons and from stderr lines.
    @Test func secretsAreScrubbedFromReasonsAndStderr() async throws {
        let logs = RecordingLogSink()
        let c = Self.channel(
            "secrets", logs: logs, config: ["server": "s", "password": "pw-secret-value", "hidden": "hidden-value-42"],
            configSecrets: ["pw-secret-value"])
        let targets = Self.targets(2, token: "app-token-secret")
        let results = await c.deliver(Self.request(targets))
        #expect(results.map(\.outcome) == [.failed, .failed])
        #expect(results[0].reason == "bad token ‹redacted› / ‹redacted›")
        #expect(c.secrets.contains("hidden-value-42"))
        await c.shutdown()
        let text = logs.text
        #expect(text.contains("posting with appToken=‹redacted› password=‹redacted› hidden=‹redacted›"), "\(text)")
        for secret in ["app-token-secret", "pw-secret-value", "hidden-value-42"] { #expect(!text.contains(secret)) }
    }

    @Test func registrationsAreCheckedByThePlugin() async throws {
        let logs = RecordingLogSink()
        let c = Self.channel("ok", logs: logs)
        await #expect(throws: ValidationError(field: "appToken", "required")) {
            _ = try await c.validateRegistration(Device(deviceId: "d", platform: "gotify", fields: [:]))
        }
        let ok = try await c.validateRegistration(Device(deviceId: "d", platform: "gotify", fields: ["appToken": "x"]))
        #expect(ok.fields == ["appToken": "x"])
        await c.shutdown()
    }

    /// A channel released without `shutdown` (a reload replaced its config) stops its plugin.
    @Test func aReleasedChannelStopsItsPlugin() async throws {
        let logs = RecordingLogSink()
        var c: ExecChannel? = Self.channel("ok", logs: logs)
        _ = await c?.deliver(Self.request(Self.targets(1)))
        let pid = try #require(c?.pid)
        #expect(kill(pid, 0) == 0)
        c = nil
        var gone = false
        for _ in 0..<1000 where !gone {
            gone = kill(pid, 0) != 0
            if !gone { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(gone)
    }
}
