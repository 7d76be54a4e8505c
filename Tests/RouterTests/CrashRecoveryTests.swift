import ChannelAPI
import Foundation
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The crash test: `herald send` fans one notification out to 2,000 devices at a local FCM fake and
/// is killed with SIGKILL mid-way; a restarted `herald drain` completes it. Every device must have
/// received the notification, and any duplicate must carry the same idempotency key.
@Suite(.serialized, .stopsFakeHTTPServers) struct CrashRecoveryTests {
    static let devices = 2_000

    @Test func sigkillMidFanOutLosesNothing() async throws {
        let fixture = try await FCMFanOutFixture.make(devices: Self.devices)
        let server = fixture.server
        let cli = fixture.cli
        // Answers held for 30 s (500 in flight: the fan-out cannot end within a minute), so the send
        // is still running when the poll below sees part of it, however slow a poll of the fake's
        // log is on a loaded machine. With 1 s answers, a poll that took over 4 s under
        // `make test-loaded` (two busy loops and builds beside it) let the send finish first.
        try await fixture.answer([FCMFanOutFixture.ok(delay: .seconds(30))])

        // Start the fan-out and kill it with SIGKILL once part of it has reached the provider.
        let send = try cli.launch([
            "send", "-c", cli.config, "--json", #"{"id":"crash-1","title":"Deploy finished","body":"v1.2.3"}"#,
        ])
        var seen = 0
        for _ in 0..<600 {
            seen = try await server.requests().filter { $0.path.hasSuffix("messages:send") }.count
            if seen >= 300 || !send.isRunning { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        let killedMidWay = send.isRunning
        try await send.kill()
        try await fixture.answer([FCMFanOutFixture.ok()])
        #expect(killedMidWay, "the send finished before it could be killed (\(seen) requests seen)")

        let drain = try cli.run(["drain", "--until-empty", "--timeout", "120", "--format", "json"])
        #expect(drain.code == 0, "\(drain.stderr)")
        #expect(try JSONValue.parse(drain.stdout)["remaining"] == 0)

        let (idsByToken, countByToken) = try await fixture.received()
        #expect(idsByToken.count == Self.devices, "every device received the notification")
        #expect(idsByToken.values.allSatisfy { $0.count == 1 }, "duplicates carry the same idempotency key")
        let duplicates = countByToken.values.filter { $0 > 1 }.count
        // The executor keeps 4 chunks of 125 in flight; what a kill leaves sent but unrecorded is resent.
        #expect(duplicates <= 500, "at most the in-flight chunks (4 x 125) are resent (\(duplicates))")
        let history = try cli.run(["history", "--format", "json", "--id", "crash-1"])
        let deliveries = try JSONValue.parse(history.stdout).arrayValue?.first?["deliveries"]?.arrayValue ?? []
        #expect(deliveries.count == Self.devices)
        #expect(deliveries.allSatisfy { $0["outcome"] == "delivered" })
    }
}
