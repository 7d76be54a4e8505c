import ChannelAPI
import Foundation
import SinkChannels
import Testing

/// The log sink's line stamps `deliveredAt` as an RFC 3339 / ISO 8601 UTC time to the second (the
/// text ISO8601DateFormatter gave), now without building a formatter per line.
@Suite struct LogChannelLineTests {
    @Test func deliveredAtIsAnISO8601UTCSecond() throws {
        let n = HeraldNotification(id: "n1", title: "t")
        // 1,800,000,000.789 s after the epoch is 2027-01-15 08:00:00.789 UTC; fractions are dropped.
        let line = LogChannel.line(for: n, at: Date(timeIntervalSince1970: 1_800_000_000.789))
        #expect(line.hasSuffix("\n"))
        let o = try JSONValue.parse(Array(line.utf8))
        #expect(o["deliveredAt"]?.stringValue == "2027-01-15T08:00:00Z")
        #expect(o["id"]?.stringValue == "n1")
        let before = LogChannel.line(for: n, at: Date(timeIntervalSince1970: -5))
        #expect(try JSONValue.parse(Array(before.utf8))["deliveredAt"]?.stringValue == "1969-12-31T23:59:55Z")
    }
}
