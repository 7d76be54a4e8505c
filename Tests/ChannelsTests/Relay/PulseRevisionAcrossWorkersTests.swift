import ChannelAPI
import Foundation
import HeraldHTTP
import Router
import RouterTesting
import Testing

@testable import RelayChannel

/// Issue 18: two workers (two stores on one PostgreSQL database) sending updates of the same Pulse
/// ref at once: the revision is taken with an atomic `update` of channel state, so revisions stay
/// strictly increasing and unique across both, even when both propose the same clock value.
@Suite struct PulseRevisionAcrossWorkersTests {
    @Test func revisionsStayStrictlyIncreasingAcrossTwoWorkers() async throws {
        let url = try TestPostgres.start().createDatabase()
        let stores = [try PostgresStore(url: url), try PostgresStore(url: url)]
        defer { for s in stores { s.close() } }
        let http = try HTTPClient()
        defer { Task { await http.shutdown() } }
        let relays = stores.map { store in
            PulseRelay(
                allowedRelays: [], currentRelay: "https://relay.example",
                context: ChannelContext(
                    name: "relay", http: http, clock: ManualClock(), random: FixedRandom(),
                    logger: ChannelLogger(source: "relay", sink: RecordingLogSink()), state: store.channelState("relay")
                ))
        }
        let proposed: Int64 = 1_767_225_600_000
        let perWorker = 30
        let seen = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for relay in relays {
                group.addTask {
                    (0..<perWorker).map { _ in relay.nextRevision(ref: "deploy", proposed: proposed) }
                }
            }
            var all: [[Int64]] = []
            for try await s in group { all.append(s) }
            return all
        }
        for s in seen { #expect(s == s.sorted() && Set(s).count == s.count, "one worker's revisions increase") }
        let all = seen.flatMap { $0 }.sorted()
        #expect(all == Array(proposed..<(proposed + Int64(2 * perWorker))), "no revision handed out twice")
    }
}
