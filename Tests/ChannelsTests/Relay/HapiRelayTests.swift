import ChannelAPI
import ChannelSupport
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import RelayChannel

@Suite("Relay protocol hapi")
struct HapiRelayTests {
    static let key = Array(UInt8(1)...UInt8(32))
    static let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
    let notification = HeraldNotification(
        id: "n1", type: "permission-request", title: "Allow rm?", body: "Agent wants to run rm -rf build",
        data: ["sessionId": "s-42", "sessionName": "build"])

    @Test func configNeedsProtocolAndURL() throws {
        #expect(try RelayTest.configError("type: relay\nurl: https://x.example") != nil)
        let missingURL = try RelayTest.configError("type: relay\nprotocol: hapi")
        #expect(missingURL?.contains("url") == true)
        #expect(try RelayTest.configError("type: relay\nprotocol: carrier-pigeon\nurl: https://x.example") != nil)
        #expect(try RelayTest.configError("type: relay\nprotocol: hapi\nurl: https://x.example") == nil)
    }

    @Test func bodyShapeAndEnvelopeOpens() throws {
        let body = try HapiRelay.body(
            notification: notification, token: Self.token.uppercased(), pushKey: Self.key,
            nonce: Array(repeating: 7, count: 12))
        let o = try RelayTest.object(body)
        #expect(Set(o.keys) == ["platform", "token", "envelope", "collapseId", "priority"])
        #expect(o["platform"] == "ios")
        #expect(o["token"]?.stringValue == Self.token)
        #expect(o["collapseId"]?.stringValue == "permission-request-s-42")
        #expect(o["priority"]?.intValue == 10)
        let envelope = try #require(o["envelope"]?.stringValue)
        let opened = try HapiPayload.open(envelope: envelope, key: Self.key)
        #expect(opened == HapiPayload.plaintext(for: notification))
        // Independent check: Python cryptography's AESGCM opens the same envelope.
        let plain = try APNsTestSupport.python("fcm_open_envelope.py", [Base64.encode(Self.key), envelope])
        #expect(Array(plain.utf8) == HapiPayload.plaintext(for: notification))
    }

    @Test func lowPriorityAndNoCollapseId() throws {
        let n = HeraldNotification(title: "t", body: "b", priority: .low)
        let o = try RelayTest.object(
            HapiRelay.body(notification: n, token: Self.token, pushKey: Self.key, nonce: Array(repeating: 0, count: 12))
        )
        #expect(o["priority"]?.intValue == 5)
        #expect(o["collapseId"] == nil)
    }

    @Test func oversizedEnvelopeFailsBeforeSending() async throws {
        let setup = try RelaySetup.make("type: relay\nprotocol: hapi\nurl: {URL}")
        setup.http.route("/v1/push", [.json(200, "{}")])
        let big = HeraldNotification(title: "t", body: String(repeating: "x", count: 3000))
        let d = RelayTest.ios("d1", token: Self.token, pushKey: Self.key)
        let results = await setup.channel.deliver(DeliveryRequest(notification: big, targets: [RelayTest.target(d)]))
        #expect(results.map(\.outcome) == [.failed])
        #expect(results.first?.reason?.contains("3200") == true)
        #expect(setup.http.requests.isEmpty)
    }

    @Test func validationNeedsPushKey() async throws {
        let setup = try RelaySetup.make("type: relay\nprotocol: hapi\nurl: {URL}")
        let noKey = RelayTest.ios("d1", token: Self.token)
        await #expect(throws: ValidationError.self) { try await setup.channel.validateRegistration(noKey) }
        do {
            _ = try await setup.channel.validateRegistration(noKey)
        } catch {
            #expect(error.field == "pushKey")
        }
        var short = noKey
        short.fields["pushKey"] = .string(Base64.encode([1, 2, 3]))
        await #expect(throws: ValidationError.self) { try await setup.channel.validateRegistration(short) }
        let ok = RelayTest.ios("d1", token: Self.token, pushKey: Self.key)
        #expect(try await setup.channel.validateRegistration(ok) == ok)
        // Another platform's device is passed through unchanged.
        let pulse = Device(deviceId: "p", platform: "pulse", fields: ["x": "y"])
        #expect(try await setup.channel.validateRegistration(pulse) == pulse)
    }

    @Test(arguments: [
        (200, DeliveryOutcome.delivered), (410, .dead), (413, .failed), (429, .retry), (502, .retry),
        (503, .retry), (500, .retry), (400, .failed), (501, .failed),
    ])
    func answers(status: Int, expected: DeliveryOutcome) async throws {
        let setup = try RelaySetup.make("type: relay\nprotocol: hapi\nurl: {URL}/")
        let body = status == 410 ? "{\"code\":\"unregistered\"}" : "{\"error\":\"e\(status)\"}"
        setup.http.route("/v1/push", method: "POST", [.json(status, body, headers: ["retry-after": "17"])])
        let d = RelayTest.ios("d1", token: Self.token, pushKey: Self.key)
        let results = await setup.channel.deliver(
            DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
        #expect(results.count == 1)
        #expect(results.first?.outcome == expected)
        #expect(results.first?.status == status)
        if expected == .retry { #expect(results.first?.retryAfter == .seconds(17)) }
        if status == 410 { #expect(results.first?.reason?.contains("unregistered") == true) }
        let requests = setup.http.requests
        #expect(requests.count == 1)
        #expect(requests.first?.path == "/v1/push")
        // The recorded envelope opens with the device key.
        let o = try RelayTest.object(requests.first?.body ?? [])
        let env = try #require(o["envelope"]?.stringValue)
        #expect(try HapiPayload.open(envelope: env, key: Self.key) == HapiPayload.plaintext(for: notification))
        #expect(!setup.sink.text.contains(Self.token))
        #expect(!setup.sink.text.contains(Base64.encode(Self.key)))
    }

    @Test func transportErrorRetries() async throws {
        let config = try APNsTestSupport.config("type: relay\nprotocol: hapi\nurl: https://127.0.0.1:9", name: "relay")
        let http = ScriptedTransport { _ in .failure(HTTPError(.connectFailed, "connection refused")) }
        let context = ChannelContext(
            name: "relay", http: http, clock: ManualClock(), random: FixedRandom(),
            logger: ChannelLogger(source: "relay", sink: RecordingLogSink()), state: InMemoryChannelState())
        let channel = try RelayChannel(config: config, context: context)
        let d = RelayTest.ios("d1", token: Self.token, pushKey: Self.key)
        let results = await channel.deliver(DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
        #expect(results.map(\.outcome) == [.retry])
        #expect(http.requests.map(\.url) == ["https://127.0.0.1:9/v1/push"])
    }
}
