import ChannelAPI
import Foundation
import Testing

@testable import Router

/// The report line `herald send --format json` prints per delivery, and the event-log entry the
/// record writes per delivery, are written without a `JSONValue` tree: their bytes must be the
/// canonical bytes of the tree they replace, for every optional field present or absent.
@Suite struct ReportJSONTests {
    static let at = Date(timeIntervalSince1970: 1_700_000_000)

    static var records: [DeliveryRecord] {
        var out: [DeliveryRecord] = []
        for state in [DeliveryState.pending, .retry, .delivered, .failed, .dead, .suppressed] {
            out.append(
                DeliveryRecord(
                    id: "d-1", notificationId: "n-1", step: 0, position: 0, channel: "apns", deviceId: nil,
                    platform: nil, state: state,
                    attempts: 0, updatedAt: at))
            out.append(
                DeliveryRecord(
                    id: "d-2", notificationId: "n-1", step: 2, position: 7, channel: "web\"push",
                    deviceId: "é-device\n", platform: "web", state: state, attempts: 3,
                    nextAttemptAt: at.addingTimeInterval(30), status: 429, reason: "Too many \\ requests",
                    providerMessageId: "m-9", updatedAt: at))
        }
        return out
    }

    @Test func reportLineIsTheCanonicalReportJSON() throws {
        for r in Self.records {
            var bytes: [UInt8] = []
            r.writeReportJSON(into: &bytes)
            #expect(bytes == r.reportJSON.canonicalBytes)
            #expect(try JSONSerialization.jsonObject(with: Data(bytes)) is [String: Any])
        }
    }

    @Test func deliveryEventTextIsTheCanonicalEventData() {
        for deviceId in [nil, "ios-1"] as [String?] {
            for reason in [nil, "a \"quoted\" reason"] as [String?] {
                let text = EventLogData.deliveryText(
                    notificationId: "n-1", channel: "apns", deviceId: deviceId, outcome: "delivered", attempt: 2,
                    reason: reason)
                let tree = EventLogData.delivery(
                    notificationId: "n-1", channel: "apns", deviceId: deviceId, outcome: "delivered", attempt: 2,
                    reason: reason)
                #expect(text == tree.canonicalString)
            }
        }
    }
}
