import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import RelayChannel

@Suite("Relay protocol home-assistant")
struct HomeAssistantRelayTests {
    static func device(_ url: String) -> Device {
        Device(
            deviceId: "ha", platform: "mobile-app",
            fields: [
                "pushUrl": .string(url), "token": "fcm:tok-123",
                "registrationInfo": ["appId": "io.robbie.HomeAssistant", "appVersion": "2024.1", "osVersion": "17.2"],
            ])
    }

    let notification = Notification(
        title: "Door", body: "Front door opened", url: "/lovelace/0", tag: "door", data: ["k": "v"],
        actions: [NotificationAction(id: "ok", title: "OK", url: "https://x.example")])

    @Test func bodyShape() throws {
        let o = try RelayTest.object(HomeAssistantRelay.body(notification, device: Self.device("https://f.example")))
        #expect(o["message"] == "Front door opened")
        #expect(o["title"] == "Door")
        #expect(o["push_token"] == "fcm:tok-123")
        #expect(
            o["registration_info"] == [
                "app_id": "io.robbie.HomeAssistant", "app_version": "2024.1", "os_version": "17.2",
            ])
        #expect(o["data"]?["url"] == "/lovelace/0")
        #expect(o["data"]?["tag"] == "door")
        #expect(o["data"]?["k"] == "v")
        #expect(o["data"]?["actions"] == [["action": "ok", "title": "OK", "uri": "https://x.example"]])
    }

    @Test func secretboxRefusedAtConfigTime() throws {
        let e = try RelayTest.configError("type: relay\nprotocol: home-assistant\nencryption: secretbox")
        #expect(e?.contains("not supported yet") == true)
        #expect(try RelayTest.configError("type: relay\nprotocol: home-assistant") == nil)
    }

    @Test func pushURLPolicy() async throws {
        let setup = try await RelaySetup.make("type: relay\nprotocol: home-assistant")
        await #expect(throws: ValidationError.self) {
            try await setup.channel.validateRegistration(Self.device("\(setup.server.baseURL)/push"))
        }
        let r = await setup.channel.deliver(
            DeliveryRequest(
                notification: notification, targets: [RelayTest.target(Self.device("\(setup.server.baseURL)/push"))]))
        #expect(r.first?.outcome == .failed)
        #expect(try await setup.server.requests().isEmpty)
        await setup.stop()
    }

    @Test(arguments: [
        (
            201,
            "{\"rateLimits\":{\"successful\":3,\"maximum\":500,\"errors\":0,\"resetsAt\":\"2026-01-02T00:00:00Z\"}}",
            DeliveryOutcome.delivered
        ),
        (200, "{}", .delivered), (202, "{}", .delivered),
        (
            429,
            "{\"errorType\":\"RateLimited\",\"message\":\"limit\",\"rateLimits\":{\"resetsAt\":\"2026-01-01T01:00:00Z\"}}",
            .retry
        ),
        (500, "{\"errorType\":\"InvalidToken\",\"message\":\"gone\"}", .dead),
        (500, "{\"errorType\":\"PayloadTooLarge\",\"message\":\"big\"}", .failed),
        (500, "{\"errorType\":\"InternalError\"}", .retry), (503, "", .retry),
        (403, "{\"errorMessage\":\"You did not send a token!\"}", .failed),
    ])
    func answers(status: Int, body: String, expected: DeliveryOutcome) async throws {
        let setup = try await RelaySetup.make("type: relay\nprotocol: home-assistant", allowHosts: ["127.0.0.1"])
        try await setup.server.route("/push", [.json(status, body)])
        let d = Self.device("\(setup.server.baseURL)/push")
        #expect(try await setup.channel.validateRegistration(d) == d)
        let r = await setup.channel.deliver(DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
        #expect(r.first?.outcome == expected)
        if status == 201 {
            #expect(r.first?.details["rateLimits.successful"] == "3")
            #expect(r.first?.details["rateLimits.maximum"] == "500")
        }
        if status == 429 { #expect(r.first?.retryAfter == .seconds(3600)) }  // ManualClock starts at 2026-01-01T00:00Z
        #expect(try await setup.server.requests().count == 1)
        #expect(!setup.sink.text.contains("fcm:tok-123"))
        await setup.stop()
    }
}
