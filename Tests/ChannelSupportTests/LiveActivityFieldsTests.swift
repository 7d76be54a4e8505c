import ChannelAPI
import ChannelSupport
import Testing

/// The one Live Activity field parser APNs and the Pulse relay share (issue 16 item 3).
@Suite struct LiveActivityFieldsTests {
    static let base: [String: JSONValue] = ["event": "update", "contentState": ["title": "Build"]]

    static func reason(_ change: [String: JSONValue], extra: Set<String> = []) -> String? {
        var la = base
        for (k, v) in change { la[k] = v }
        do {
            _ = try LiveActivityFields(la, extraKeys: extra, service: "Test")
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func readsTheCommonFields() throws {
        let f = try LiveActivityFields(
            [
                "event": "end", "contentState": ["a": 1], "timestamp": 1_700_000_000, "staleDate": 1_700_000_600,
                "dismissalDate": 1_700_000_900, "relevanceScore": 0.5, "alert": ["body": "done"], "ref": "r-1",
                "revision": 7,
            ], service: "Test")
        #expect(f.event == "end")
        #expect(f.contentState == ["a": 1])
        #expect(f.timestamp == 1_700_000_000)
        #expect(f.staleDate == 1_700_000_600)
        #expect(f.dismissalDate == 1_700_000_900)
        #expect(f.relevanceScore == 0.5)
        #expect(f.alert == ["body": "done"])
        #expect(f.ref == "r-1")
        #expect(f.revision == 7)
    }

    @Test func refusesWhatNoChannelSends() {
        #expect(Self.reason(["colour": "red"]) == "liveActivity.colour is not a Test Live Activity field")
        #expect(Self.reason(["pushToken": "ab"], extra: ["pushToken"]) == nil)
        #expect(Self.reason(["event": "pause"])?.contains("start, update or end") == true)
        #expect(Self.reason(["event": .null]) == "liveActivity.event is required: start, update or end")
        #expect(Self.reason(["contentState": "x"]) == "liveActivity.contentState is required and must be an object")
        #expect(Self.reason(["timestamp": 1_700_000_000_000])?.contains("millisecond") == true)
        #expect(Self.reason(["staleDate": 1.5])?.contains("integer number of unix seconds") == true)
        #expect(Self.reason(["staleDate": -1])?.contains("unix seconds") == true)
        #expect(Self.reason(["relevanceScore": "high"]) == "liveActivity.relevanceScore must be a number")
        #expect(Self.reason(["ref": 5]) == "liveActivity.ref must be a string")
        #expect(Self.reason(["revision": -1]) == "liveActivity.revision must be a non-negative integer")
        #expect(Self.reason(["alert": .null, "ref": .null, "timestamp": .null]) == nil)
    }
}
