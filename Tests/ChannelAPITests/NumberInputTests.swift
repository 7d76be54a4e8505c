import ChannelAPI
import Testing

/// Numbers in device and notification JSON never trap: too large, fractional, negative and
/// out-of-range values are a ValidationError naming the field (issue 15 item 2).
@Suite struct NumberInputTests {
    @Test(arguments: [
        (#"{"body":"x","ttl":99999999999999999999}"#, "ttl"),
        (#"{"body":"x","ttl":18446744073709551616}"#, "ttl"),
        (#"{"body":"x","ttl":1e300}"#, "ttl"),
        (#"{"body":"x","ttl":-1}"#, "ttl"),
        (#"{"body":"x","ttl":1.5}"#, "ttl"),
        (#"{"body":"x","badge":99999999999999999999}"#, "badge"),
        (#"{"body":"x","badge":-9223372036854775809}"#, "badge"),
        (#"{"body":"x","badge":1e300}"#, "badge"),
    ])
    func notificationNumbersAreCheckedNotTrapped(_ json: String, _ field: String) {
        do {
            _ = try HeraldNotification(jsonText: json)
            Issue.record("expected \(field) to be refused in \(json)")
        } catch {
            #expect(error.field == field, "\(error)")
        }
    }

    @Test func outOfRangeJSONNumbersAreRefusedByTheParser() {
        for text in ["1e400", "-1e400", #"{"ttl":1e999}"#] {
            #expect(throws: JSONError.self) { try JSONValue.parse(text) }
        }
    }
}
