import ChannelAPI
import Foundation
import Testing

@testable import APNsChannel

@Suite("APNs Live Activities")
struct APNsLiveActivityTests {
    let now = Date(timeIntervalSince1970: 1_767_225_600)

    func build(_ la: [String: JSONValue], title: String? = nil, priority: Priority? = nil) throws(APNsPayloadError)
        -> APNsPreparedNotification
    {
        let n = HeraldNotification(title: title, priority: priority, liveActivity: la)
        return try APNsPayloadBuilder(topic: "com.example.app").prepare(
            DeliveryRequest(notification: n, targets: []), now: now)
    }

    func reason(_ la: [String: JSONValue]) -> String? {
        do {
            _ = try build(la)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func update() throws {
        let p = try build([
            "ref": "order-1024", "event": "update",
            "contentState": ["title": "Order #1024", "summary": "Picked up", "revision": 1_793_000_000_123],
            "alert": ["body": "Picked up"], "staleDate": 1_767_229_200, "relevanceScore": 50,
        ])
        #expect(p.pushType == .liveactivity)
        #expect(p.topic == "com.example.app.push-type.liveactivity")
        #expect(p.priority == 10)  // it has an alert
        #expect(p.activityPushToken == nil)
        let expected: JSONValue = [
            "aps": [
                "event": "update", "timestamp": 1_767_225_600,
                "content-state": ["title": "Order #1024", "summary": "Picked up", "revision": 1_793_000_000_123],
                "alert": ["body": "Picked up"], "stale-date": 1_767_229_200, "relevance-score": 50,
            ]
        ]
        #expect(p.plainBody == expected)
        let silent = try build(["event": "update", "contentState": [:], "timestamp": 1_767_225_000])
        #expect(silent.priority == 5)
        #expect(silent.plainBody?["aps"]?["timestamp"] == 1_767_225_000)
        #expect(try build(["event": "update", "contentState": [:]], priority: .high).priority == 10)
    }

    @Test func pushToStartAndEnd() throws {
        let start = try build(
            [
                "event": "start", "contentState": ["step": 1], "attributesType": "OrderAttributes",
                "attributes": ["orderId": "1024"], "pushToken": "ABCDEF01",
            ], title: "Order started")
        #expect(start.priority == 10)
        #expect(start.activityPushToken == "abcdef01")
        let aps = start.plainBody?["aps"]
        #expect(aps?["attributes-type"] == "OrderAttributes")
        #expect(aps?["attributes"] == ["orderId": "1024"])
        #expect(aps?["alert"] == ["title": "Order started"])
        let end = try build(["event": "end", "contentState": ["step": 3], "dismissalDate": 1_767_230_000])
        #expect(end.plainBody?["aps"]?["dismissal-date"] == 1_767_230_000)
    }

    /// `liveActivity.revision` is Pulse Relay's alias of `contentState.revision`: one liveActivity
    /// object can go to APNs and Pulse, so APNs accepts it and does not send it (a revision in
    /// `contentState` is part of the content state and goes out with it).
    @Test func revisionAliasIsAcceptedAndNotSent() throws {
        let p = try build([
            "ref": "order-1024", "event": "update", "revision": 1_793_000_000_123,
            "contentState": ["title": "Order #1024", "summary": "Picked up", "status": "running"],
        ])
        let expected: JSONValue = [
            "aps": [
                "event": "update", "timestamp": 1_767_225_600,
                "content-state": ["title": "Order #1024", "summary": "Picked up", "status": "running"],
            ]
        ]
        #expect(p.plainBody == expected)
        #expect(reason(["event": "update", "contentState": [:], "revision": "r1"])?.contains("revision") == true)
        #expect(reason(["event": "update", "contentState": [:], "revision": -1])?.contains("revision") == true)
    }

    @Test func refusesBadFields() {
        #expect(reason(["contentState": [:]])?.contains("event is required") == true)
        #expect(reason(["event": "pause", "contentState": [:]])?.contains("start, update or end") == true)
        #expect(reason(["event": "update"])?.contains("contentState") == true)
        #expect(reason(["event": "update", "contentState": "x"])?.contains("contentState") == true)
        #expect(reason(["event": "update", "contentState": [:], "timestamp": "now"])?.contains("timestamp") == true)
        #expect(reason(["event": "update", "contentState": [:], "timestamp": 1.5])?.contains("timestamp") == true)
        #expect(
            reason(["event": "update", "contentState": [:], "timestamp": 1_767_225_600_000])?.contains("millisecond")
                == true)
        #expect(reason(["event": "update", "contentState": [:], "staleDate": "x"])?.contains("staleDate") == true)
        #expect(
            reason(["event": "end", "contentState": [:], "dismissalDate": false])?.contains("dismissalDate") == true)
        #expect(
            reason(["event": "update", "contentState": [:], "relevanceScore": "high"])?.contains("relevanceScore")
                == true)
        #expect(reason(["event": "update", "contentState": [:], "alert": "hi"])?.contains("alert") == true)
        #expect(reason(["event": "update", "contentState": [:], "colour": "red"])?.contains("colour") == true)
        #expect(reason(["event": "update", "contentState": [:], "attributesType": "A"])?.contains("start") == true)
        #expect(reason(["event": "start", "contentState": [:], "attributes": [:]])?.contains("attributesType") == true)
        #expect(reason(["event": "start", "contentState": [:], "attributesType": "A"])?.contains("attributes") == true)
        // start without any alert text
        #expect(reason(["event": "start", "contentState": [:], "attributesType": "A", "attributes": [:]]) != nil)
        #expect(reason(["event": "update", "contentState": [:], "pushToken": "xyz"])?.contains("pushToken") == true)
    }
}
