import Foundation
import HeraldMHD
import HeraldSync
import Router

/// The delivery report of a send, streamed to the client as it is read from the store.
extension HeraldAPI {
    /// The delivery report of `summary`'s notification (contract §5, canonical JSON: the bytes of
    /// ``DeliveryReport/json``), written to the client as it is read from the store, a page at a
    /// time, so the answer to a 100,000-device send is never held whole (it is about 20 MB).
    ///
    /// The store is read synchronously, so the report is written from a thread of its own, which
    /// waits while the client has more than ``reportLowWater`` bytes unread; a client that reads
    /// nothing for `idle-timeout` is cut. A store failure midway ends the body early (the status is
    /// sent by then): the client sees a truncated document, and the failure is logged.
    func reportResponse(_ summary: SendSummary, headers: [(name: String, value: String)]) -> ServerResponse {
        // A report in flight when the server stops is still written whole (within the stop's wait).
        let stream = ResponseStream(endsWhenServerStops: false)
        let router = self.router
        let stall = settings.withLock { $0.server.idleTimeout }
        let writer = Thread {
            do {
                try router.writeReportJSON(of: summary, piece: HeraldAPI.reportChunk) { bytes in
                    guard HeraldAPI.write(bytes, to: stream, stall: stall) else { throw ReportWriteStopped() }
                }
            } catch is ReportWriteStopped {
            } catch {
                router.logger.error(
                    "the delivery report of \(summary.id) could not be read; its answer was cut short",
                    ["error": "\(error)"])
            }
            stream.finish()
        }
        writer.name = "herald.report"
        writer.start()
        return ServerResponse(
            status: 200, headers: [("Content-Type", "application/json")] + headers, body: .stream(stream))
    }

    /// Bytes of a report handed to the stream at once.
    static let reportChunk = 64 << 10
    /// A report's writer waits while the client has more than this unread.
    static let reportLowWater = 256 << 10

    /// Writes `bytes` to `stream` once the client has at most ``reportLowWater`` bytes unread (on a
    /// thread that may block: a report's writer); false when the client is gone or read nothing for
    /// `stall`.
    static func write(_ bytes: [UInt8], to stream: ResponseStream, stall: Duration) -> Bool {
        if stream.bufferedCount > reportLowWater {
            let room = Locked(false)
            let done = DispatchSemaphore(value: 0)
            Task {
                let ok = await stream.waitForRoom(atMost: reportLowWater, timeout: stall)
                room.withLock { $0 = ok }
                done.signal()
            }
            done.wait()
            guard room.withLock({ $0 }) else { return false }
        }
        return stream.write(bytes)
    }
}

/// Ends a report's writer when the client is gone or stopped reading.
private struct ReportWriteStopped: Error {}
