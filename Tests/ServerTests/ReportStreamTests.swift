import ChannelAPI
import Foundation
import HeraldMHD
import Testing

@testable import HeraldServer
@testable import Router

/// `POST /v1/notifications` answers with the delivery report written as it is read from the store
/// (issue 19: a 100,000-device answer is about 20 MB and was built whole, with a JSON tree, before
/// its first byte). The streamed body must be the same bytes as the report built whole.
@Suite struct ReportStreamTests {
    @Test func aLargeFanOutReportIsStreamedAndIsTheWholeReportsBytes() async throws {
        try await withServer { h in
            let phones = (0..<2_500).map {
                Device(deviceId: "p-\($0)", platform: "phone", fields: ["token": .string("tok-\($0)")])
            }
            _ = try await h.router.register(phones)
            let sent = try await h.request("POST", "/v1/notifications", json: #"{"id":"big","title":"Deploy done"}"#)
            #expect(sent.status == 200, "\(sent.text.prefix(300))")
            #expect(sent.headers["transfer-encoding"]?.lowercased() == "chunked")
            #expect(sent.headers["content-type"] == "application/json")
            #expect(sent.body.count > HeraldAPI.reportChunk * 4)
            let stored = try h.router.store.deliveries(notificationId: "big")
            #expect(stored.count == 2_501)  // every phone, and the hook sink
            let whole = DeliveryReport(id: "big", namespace: "default", deliveries: stored)
            #expect(sent.body == whole.json.canonicalBytes + [0x0A])
            let parsed = try #require(sent.json)
            #expect((parsed["deliveries"] as? [Any])?.count == 2_501)

            // A replay streams the stored report, marked.
            let again = try await h.request("POST", "/v1/notifications", json: #"{"id":"big","title":"Deploy done"}"#)
            #expect(again.status == 200)
            #expect(again.headers["herald-replayed"] == "true")
            var replayed = whole
            replayed.replayed = true
            #expect(again.body == replayed.json.canonicalBytes + [0x0A])
        }
    }

    @Test func aSmallReportIsTheSameDocument() async throws {
        try await withServer { h in
            let sent = try await h.request("POST", "/v1/notifications", json: #"{"id":"few","title":"x"}"#)
            #expect(sent.status == 200)
            let stored = try h.router.store.deliveries(notificationId: "few")
            let whole = DeliveryReport(id: "few", namespace: "default", deliveries: stored)
            #expect(sent.body == whole.json.canonicalBytes + [0x0A])
        }
    }

    /// The writer waits while the client has more than the low-water mark unread, and gives up when
    /// nothing is read for the stall time (a client that stopped reading holds no report in memory).
    @Test func aWriterGivesUpOnAClientThatStoppedReading() async throws {
        let stream = ResponseStream(endsWhenServerStops: false)
        let chunk = [UInt8](repeating: 0x20, count: HeraldAPI.reportLowWater + 1)
        #expect(HeraldAPI.write(chunk, to: stream, stall: .milliseconds(50)))
        let clock = ContinuousClock()
        let start = clock.now
        // On a thread of its own, as the report's writer runs: the write blocks while it waits, and a
        // blocked thread of the concurrency pool (two here) would starve every other suite.
        let accepted = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
            Thread { c.resume(returning: HeraldAPI.write(chunk, to: stream, stall: .milliseconds(200))) }.start()
        }
        #expect(!accepted)
        #expect(clock.now - start >= .milliseconds(150))
        #expect(stream.bufferedCount == chunk.count)
        stream.finish()
    }
}
