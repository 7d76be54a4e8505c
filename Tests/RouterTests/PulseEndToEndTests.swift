import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import RouterTesting
import Testing

/// The contract's own example notification (design/contract.md §4), sent with the real `herald`
/// binary to a pulse device, reaches a fake Pulse relay as the body the Pulse Relay integration
/// guide describes (shared/seeds/004, 三): `revision` inside `contentState`.
@Suite(.serialized, .stopsFakeHTTPServers) struct PulseEndToEndTests {
    @Test func contractExampleReachesThePulseRelay() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/v1/devices/", [.json(200, "{\"ok\":true}")])
        let cli = try CLI(
            configText: """
                version: 1
                store: { path: ./herald.db }
                tls: { ca-file: \(server.caFile) }
                channels:
                  pulse:
                    type: relay
                    protocol: pulse
                    current-relay: "\(server.baseURL)"
                    allowed-relays: ["\(server.baseURL)", "https://relay.crsyounen.com"]
                routes:
                  default:
                    - deliver: [pulse]
                """)
        let key = Array(UInt8(0)...UInt8(31))
        let device: JSONValue = [
            "deviceId": "iphone", "platform": "pulse", "relay": "https://relay.crsyounen.com",
            "relayDeviceId": "8d3f01", "sourceId": "s_7Kq", "pushKey": .string(Base64.urlEncode(key)),
            "deviceName": "iPhone",
        ]
        let registered = try cli.run(
            ["devices", "register"], stdin: String(decoding: device.canonicalBytes, as: UTF8.self))
        #expect(registered.code == 0, "\(registered.stderr)")

        // The contract's §4 example, shared with the channel test in ChannelsTests.
        let notification = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../Vectors/contract-example-notification.json"), encoding: .utf8)
        let sent = try cli.run(["send", "--format", "json"], stdin: notification)
        #expect(sent.code == 0, "\(sent.stderr)")
        let report = try JSONValue.parse(sent.stdout)
        let delivery = try #require(report["deliveries"]?.arrayValue?.first)
        #expect(delivery["channel"] == "pulse")
        #expect(delivery["outcome"] == "delivered", "\(sent.stdout)")

        let requests = try await server.requests()
        let r = try #require(requests.first)
        #expect(requests.count == 1)
        #expect(r.path == "/v1/devices/8d3f01/push")
        #expect(r.header("x-pulse-source") == "s_7Kq")
        var body = try #require(try JSONValue.parse(r.body).objectValue)
        let timestamp = try #require(body.removeValue(forKey: "timestamp")?.intValue)
        #expect(abs(timestamp - Int(Date().timeIntervalSince1970)) < 300)
        let expected: JSONValue = [
            "ref": "order-1024", "event": "update",
            "contentState": [
                "title": "Order #1024", "summary": "Picked up", "status": "running", "revision": 1_793_000_000_123,
            ],
            "alert": ["body": "Picked up"],
        ]
        #expect(JSONValue.object(body) == expected)
        // The signature verifies over the exact bytes with the device's key (guide, 三).
        let auth = try #require(r.header("x-pulse-auth")).split(separator: " ").map(String.init)
        try #require(auth.count == 4)
        let digest = SHA256.hash(r.body).map { String(format: "%02x", $0) }.joined()
        let mac = HMACSHA256.authenticationCode(
            key: key, message: Array("POST\n\(r.path)\n\(auth[1])\n\(auth[2])\n\(digest)".utf8))
        #expect(auth[0] == "v2")
        #expect(auth[3] == Base64.urlEncode(mac))
    }
}
