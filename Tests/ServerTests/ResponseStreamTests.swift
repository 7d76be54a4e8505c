import Foundation
import Testing

@testable import HeraldMHD

/// The stream buffer under the event stream: bytes come out once, in order, across writes; a
/// writer waiting for room is woken by the reader, and told when its client stopped reading.
@Suite struct ResponseStreamTests {
    static func drain(_ stream: ResponseStream, max: Int) -> [UInt8] {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max)
        defer { buffer.deallocate() }
        let n = stream.read(into: buffer, max: max)
        guard n > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: buffer, count: n))
    }

    @Test func bytesComeOutOnceInOrderAcrossWrites() {
        let stream = ResponseStream()
        #expect(stream.write(Array("abc".utf8)))
        #expect(stream.write(Array("defgh".utf8)))
        #expect(stream.write([]))
        #expect(stream.bufferedCount == 8)
        #expect(Self.drain(stream, max: 2) == Array("ab".utf8))
        #expect(Self.drain(stream, max: 4) == Array("cdef".utf8))
        #expect(stream.write(Array("ij".utf8)))
        #expect(Self.drain(stream, max: 100) == Array("ghij".utf8))
        #expect(stream.bufferedCount == 0)
    }

    @Test func aWriterWaitingForRoomIsWokenByTheReader() async {
        let stream = ResponseStream()
        stream.write([UInt8](repeating: 1, count: 100))
        let waiter = Task { await stream.waitForRoom(atMost: 10, timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(Self.drain(stream, max: 50).count == 50)  // 50 left: still waiting
        #expect(Self.drain(stream, max: 45).count == 45)  // 5 left: room
        #expect(await waiter.value == true)
        // Room at once when there is room already.
        #expect(await stream.waitForRoom(atMost: 10, timeout: .seconds(30)) == true)
    }

    @Test func aClientThatStopsReadingEndsTheWaitWithFalse() async {
        let stream = ResponseStream()
        stream.write([UInt8](repeating: 1, count: 100))
        let started = ContinuousClock.now
        #expect(await stream.waitForRoom(atMost: 10, timeout: .milliseconds(100)) == false)
        #expect(ContinuousClock.now - started >= .milliseconds(100))
        // A stream that is finished meanwhile ends the wait with true (nothing more to write).
        let waiter = Task { await stream.waitForRoom(atMost: 10, timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(50))
        stream.finish()
        #expect(await waiter.value == true)
    }
}
