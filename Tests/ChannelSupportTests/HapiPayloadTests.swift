import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import Testing

@Suite struct HapiPayloadTests {
    @Test func reproducesFixtureEnvelope() throws {
        // The in-repo copy of ../shared/fixtures/hapi-envelope-v1.json (CI may not lay shared/ out here).
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("HeraldCryptoTests/Vectors/hapi-envelope-v1.json")
        let fixture = try JSONValue.parse(Array(try Data(contentsOf: url)))
        func hex(_ s: String) -> [UInt8] {
            var out: [UInt8] = []
            var i = s.startIndex
            while i < s.endIndex {
                let j = s.index(i, offsetBy: 2)
                out.append(UInt8(s[i..<j], radix: 16) ?? 0)
                i = j
            }
            return out
        }
        let key = hex(fixture["key_hex"]?.stringValue ?? "")
        let nonce = hex(fixture["nonce_hex"]?.stringValue ?? "")
        // The fixture's plaintext is exactly what the composer produces for this notification.
        let n = HeraldNotification(type: "ready", title: "HAPI", body: "Ready for input", data: ["sessionId": "s1"])
        let plaintext = HapiPayload.plaintext(for: n)
        #expect(String(decoding: plaintext, as: UTF8.self) == fixture["plaintext"]?.stringValue)
        let envelope = try HapiPayload.envelope(plaintext: plaintext, key: key, nonce: nonce)
        #expect(envelope == fixture["envelope_b64"]?.stringValue)
        #expect(try HapiPayload.open(envelope: envelope, key: key) == plaintext)
        var wrong = key
        wrong[0] ^= 1
        #expect(throws: CryptoError.self) { try HapiPayload.open(envelope: envelope, key: wrong) }
    }

    @Test func notifySummaryIsStrippedAndKept() {
        let body =
            "Done refactoring.\nAGENT_NOTIFY_SUMMARY {\"version\":1,\"agent\":\"claude\",\"project\":\"hapi\",\"status\":\"done\",\"summary\":\"Refactor complete\",\"secret\":\"x\"}\n"
        let n = HeraldNotification(type: "ready", title: "Ready", body: body, data: ["sessionId": "s1"])
        let data = HapiPayload.data(for: n)
        #expect(data["body"] == "Done refactoring.")
        #expect(
            data["notifySummary"]
                == #"{"agent":"claude","project":"hapi","status":"done","summary":"Refactor complete","version":1}"#)
        #expect(data["contractVersion"] == "1")
        // Only `ready` notifications carry a summary; a malformed line is left alone.
        #expect(HapiPayload.data(for: HeraldNotification(type: "other", body: body))["notifySummary"] == nil)
        #expect(
            HapiPayload.data(for: HeraldNotification(type: "ready", body: "x\nAGENT_NOTIFY_SUMMARY {oops"))["body"]
                == "x\nAGENT_NOTIFY_SUMMARY {oops")
    }
}
