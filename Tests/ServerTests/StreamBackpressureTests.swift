import ChannelAPI
import Foundation
import Router
import Testing

@testable import HeraldMHD
@testable import HeraldServer

/// Issue 17, the event stream's memory: a client that reads slower than events come gets them from
/// the shared event-log tail as it reads, so its own buffer stays bounded, and it still gets every
/// event exactly once, in order.
@Suite struct StreamBackpressureTests {
    @Test func aSlowReaderHoldsABoundedBufferAndStillGetsEveryEvent() async throws {
        let (router, _, home) = try await ServerHarness.makeRouter()
        let api = HeraldAPI(router: router, server: ServerHarness.defaults)
        let forwarder = api.forwardRouterEvents()
        defer {
            api.beginShutdown()
            forwarder.cancel()
            try? FileManager.default.removeItem(atPath: home)
        }
        let response = await api.handle(
            ServerRequest(
                method: "GET", path: "/v1/events", headers: ["authorization": "Bearer \(ServerHarness.admin)"]))
        #expect(response.status == 200)
        guard case .stream(let stream) = response.body else {
            Issue.record("the event stream is not a stream")
            return
        }
        // 3,000 `notification` events of about 95 bytes each (285 KB) while nobody reads.
        let count = 3_000
        for i in 0..<count { try router.enqueue(HeraldNotification(id: "bp-\(i)", title: "t")) }
        // Generous deadlines: the whole suite runs in parallel on two cores.
        let filled = ContinuousClock.now + .seconds(60)
        while stream.bufferedCount < HeraldAPI.streamLowWater, ContinuousClock.now < filled {
            try await Task.sleep(for: .milliseconds(20))
        }
        // Give the writer time to write more if it would (the streams poll the log at least once a second).
        try await Task.sleep(for: .milliseconds(1_500))
        // At most the low-water mark plus one page of frames (each under 128 bytes here) is held.
        let bound = HeraldAPI.streamLowWater + HeraldAPI.streamPage * 128
        #expect(stream.bufferedCount > 0)
        #expect(stream.bufferedCount <= bound, "\(stream.bufferedCount) bytes buffered")

        // Now read it all, 4 KB at a time: every event arrives once, in order.
        var text: [UInt8] = []
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 4_096)
        defer { buffer.deallocate() }
        let drained = ContinuousClock.now + .seconds(120)
        var frames = 0
        let end = Array("\n\n".utf8)
        while frames < count + 1, ContinuousClock.now < drained {  // + 1: the opening comment
            let n = stream.read(into: buffer, max: 4_096)
            if n > 0 {
                let from = max(0, text.count - 1)
                text.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: n))
                #expect(stream.bufferedCount <= bound)
                // Frames end with a blank line; count those completed by this read.
                var i = from
                while i + 1 < text.count {
                    if text[i] == end[0] && text[i + 1] == end[1] {
                        frames += 1
                        i += 2
                    } else {
                        i += 1
                    }
                }
            } else {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let ids = String(decoding: text, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("id: ") }.compactMap { Int64($0.dropFirst(4)) }
        #expect(ids.count == count)
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
        let all = String(decoding: text, as: UTF8.self)
        for i in [0, 1, 1_499, 2_998, 2_999] { #expect(all.contains(#""notificationId":"bp-\#(i)""#)) }
        #expect(all.components(separatedBy: "event: notification\n").count - 1 == count)
    }
}
