import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The crash-and-fault suite's SIGKILL trials: `herald send`, `drain` and `run` are killed with
/// SIGKILL at a random moment, over fan-outs of 1, 10 and 1,000 devices (54 trials, seeded). After
/// a final `drain` (and, where a `send` was killed, the hub's retry of the same `send`): no delivery
/// is lost, a duplicate only ever carries the same idempotency key, and
/// the history agrees with what the fake FCM received.
///
/// `HERALD_SIGKILL_SEED` replays a run; the seed of a failing trial is in its message.
@Suite(.serialized) struct SIGKILLTrialTests {
    enum Victim: String, CaseIterable, Sendable { case send, drain, run }

    struct Plan: Sendable, CustomTestStringConvertible {
        let devices: Int
        let victim: Victim
        let trials: Int
        /// The kill lands uniformly in [0, window) after the victim starts.
        let window: Duration
        var testDescription: String { "\(victim.rawValue) × \(trials), \(devices) device(s)" }
    }

    static let plans: [Plan] = [
        Plan(devices: 1, victim: .send, trials: 8, window: .milliseconds(600)),
        Plan(devices: 1, victim: .drain, trials: 5, window: .milliseconds(300)),
        Plan(devices: 1, victim: .run, trials: 5, window: .milliseconds(400)),
        Plan(devices: 10, victim: .send, trials: 8, window: .milliseconds(600)),
        Plan(devices: 10, victim: .drain, trials: 5, window: .milliseconds(300)),
        Plan(devices: 10, victim: .run, trials: 5, window: .milliseconds(400)),
        Plan(devices: 1_000, victim: .send, trials: 8, window: .milliseconds(800)),
        Plan(devices: 1_000, victim: .drain, trials: 5, window: .milliseconds(1_200)),
        Plan(devices: 1_000, victim: .run, trials: 5, window: .milliseconds(1_200)),
    ]

    static let baseSeed: UInt64 =
        ProcessInfo.processInfo.environment["HERALD_SIGKILL_SEED"].flatMap { UInt64($0) }
        ?? 0x5EED_2026

    @Test(arguments: plans) func killedAtRandomMomentsLosesNothing(plan: Plan) async throws {
        let fixture = try await FCMFanOutFixture.make(
            devices: plan.devices, retry: "{ attempts: 20, initial: 1s, max: 2s }")
        defer { Task { await fixture.server.stop() } }
        var rng = SplitMix64(
            seed: Self.baseSeed &+ UInt64(plan.devices) &* 31
                &+ UInt64(Victim.allCases.firstIndex(of: plan.victim) ?? 0))
        var killedMidWay = 0
        // Early kills the test's own scheduling delayed well past their moment (a loaded pool runs
        // the sleeping task late) and that then came after the victim's exit: not held against the
        // mid-way rule below, which checks the test's kill timing, not the code under test.
        var lateAfterExit = 0
        // Under a sanitizer each process is 5–20× slower: one trial per plan keeps the run bounded.
        let trials = TestTiming.underSanitizer ? 1 : plan.trials
        for trial in 0..<trials {
            let seed = rng.next()
            var trialRNG = SplitMix64(seed: seed)
            let id = "kill-\(plan.victim.rawValue)-\(trial)"
            let label = "\(plan.testDescription), trial \(trial), seed \(seed)"
            try await fixture.server.reset()
            let notification = #"{"id":"\#(id)","title":"Deploy finished","body":"v1.2.3"}"#
            if plan.victim != .send {
                // Queue the fan-out: every first attempt is answered 503 with `Retry-After: 0`.
                try await fixture.answer([
                    FakeHTTPResponse(status: 503, headers: ["retry-after": "0"], body: Array("busy".utf8))
                ])
                let queued = try fixture.cli.run(["send", "--json", notification])
                #expect(queued.code == 0, "\(label): \(queued.stderr)")
            }
            // A slow-enough sink that the kill window covers the fan-out's sends, not only start-up.
            try await fixture.answer([FCMFanOutFixture.ok(delay: .milliseconds(plan.devices >= 1_000 ? 5 : 600))])
            let args: [String] =
                switch plan.victim {
                case .send: ["send", "--json", notification]
                case .drain: ["drain", "--until-empty", "--timeout", "60"]
                case .run: ["run"]
                }
            let sendsBefore = try await fixture.server.requests().filter { $0.path.hasSuffix("messages:send") }.count
            let victim = try fixture.spawn(args)
            var overslept = false
            if trialRNG.next() % 2 == 0 {
                // Early: a random moment in the window (start-up, planning, the first sends).
                let delay = Double(trialRNG.next() % 1_000_000) / 1_000_000 * plan.window.seconds
                let asleep = ContinuousClock.now
                try await Task.sleep(for: .seconds(delay))
                overslept = ContinuousClock.now - asleep > .seconds(delay) + .milliseconds(300)
            } else {
                // In flight: once the sink has seen a random number of this fan-out's sends.
                let seen = Int(trialRNG.next() % UInt64(plan.devices)) + 1
                let deadline = ContinuousClock.now + .seconds(30)
                while victim.isRunning, ContinuousClock.now < deadline,
                    try await fixture.server.requests().filter({ $0.path.hasSuffix("messages:send") }).count
                        < sendsBefore + seen
                {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            if victim.isRunning { killedMidWay += 1 } else if overslept { lateAfterExit += 1 }
            let ended = try await victim.kill()
            if plan.victim == .send && ended.terminatedBySignal {
                // The hub saw its `send` die, so it sends again: the same id is either routed now
                // (the kill came before the notification was stored) or replayed, never doubled.
                let again = try fixture.cli.run(["send", "--json", notification])
                #expect(again.code == 0, "\(label): \(again.stderr)")
            }

            let drain = try fixture.cli.run(["drain", "--until-empty", "--timeout", "120", "--format", "json"])
            #expect(drain.code == 0, "\(label): \(drain.stderr)")
            #expect(try JSONValue.parse(drain.stdout)["remaining"] == 0, "\(label)")

            let (ids, _) = try await fixture.received()
            let lost = (0..<plan.devices).filter { ids["tok-\($0)"] == nil }.count
            #expect(lost == 0, "\(label): \(lost) device(s) never received the notification")
            let mixed = ids.filter { $0.value.count > 1 }
            #expect(mixed.isEmpty, "\(label): duplicates with different idempotency keys: \(mixed.prefix(3))")
            let history = try fixture.cli.run(["history", "--format", "json", "--id", id])
            let deliveries = try JSONValue.parse(history.stdout).arrayValue?.first?["deliveries"]?.arrayValue ?? []
            #expect(deliveries.count == plan.devices, "\(label): history has \(deliveries.count) deliveries")
            let delivered = deliveries.filter { $0["outcome"] == "delivered" }.count
            #expect(delivered == ids.count, "\(label): history says \(delivered) delivered, the sink got \(ids.count)")
        }
        // A kill that lands after the victim finished still counts as a trial, but a third must land mid-way.
        // Not for a one-device plan: its victim's work takes a few milliseconds, so where a kill lands is
        // the machine's speed (an idle machine finished it first in a full run); what it must never do,
        // lose or double a delivery, is checked above for every trial.
        #expect(
            TestTiming.underSanitizer || plan.devices == 1 || killedMidWay * 3 >= trials - lateAfterExit,
            "only \(killedMidWay) of \(trials) kills landed mid-way (\(lateAfterExit) came late after the exit)")
    }
}

/// A small seeded generator (SplitMix64), so a failing trial can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Duration {
    /// The duration in seconds, as a Double.
    fileprivate var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
