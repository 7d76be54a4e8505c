import ChannelAPI
import Foundation
import HeraldChannels
import HeraldCrypto
import HeraldHTTPTesting
import Router
import RouterTesting
import Testing

/// Herald's own `pulse` relay channel (A) sending to Herald's Pulse relay (B), which sends to a fake
/// APNs: every outcome of docs/channels/relay.md's pulse table comes out as documented on A's side.
@Suite("Pulse channel to Pulse relay", .serialized, .stopsFakeHTTPServers)
struct PulseRelayChannelTests {
    static func hub(_ relay: PulseRelayRig) async throws -> Router {
        let url = "https://127.0.0.1:\(relay.port)"
        let home = try relay.rig.home
        let text = """
            version: 1
            store: { path: \(home)/pulse-hub.db }
            tls: { ca-file: \(home)/tls-cert.pem }
            channels:
              pulse: { type: relay, protocol: pulse, current-relay: "\(url)", allowed-relays: ["\(url)"] }
            routes:
              default: []
              namespaces:
                pulse:
                  - deliver: [pulse]
            """
        let config = try ConfigLoader.parse(text, registry: HeraldChannels.registry)
        return try await Router(
            config: config, registry: HeraldChannels.registry, options: RouterOptions(logSink: RecordingLogSink()))
    }

    static func device(_ id: String, _ relay: PulseRelayRig, _ site: PulseRelayRig.Site) -> Device {
        Device(
            namespace: "pulse", deviceId: id, platform: "pulse",
            fields: [
                "relay": .string("https://127.0.0.1:\(relay.port)"), "relayDeviceId": .string(site.deviceId),
                "sourceId": .string(site.sourceId), "pushKey": .string(site.pushKey), "deviceName": "iPhone",
            ])
    }

    static func activity(_ event: String, ref: String, alert: String? = nil) -> HeraldNotification {
        var n = HeraldNotification(title: "Order")
        n.namespace = "pulse"
        n.body = "Picked up"
        var la: [String: JSONValue] = [
            "event": .string(event), "ref": .string(ref),
            "contentState": ["title": "Order #1024", "summary": "Picked up", "status": "running"],
        ]
        if let alert { la["alert"] = ["body": .string(alert)] }
        n.liveActivity = la
        return n
    }

    static func state(_ hub: Router, _ n: HeraldNotification) async throws -> DeliveryState? {
        try await hub.send(n).deliveries.first?.state
    }

    @Test func everyOutcomeComesThroughAsDocumented() async throws {
        try await RelayRig.with(relays: try PulseRelayRig.relays(), withHub: false, tls: true) { rig in
            let p = PulseRelayRig(rig: rig)
            let apns = rig.apns
            try await rig.apnsAnswers(200)
            let phone = try await p.register()
            let site = try await p.mint(phone)
            let hub = try await Self.hub(p)
            _ = try await hub.register(Self.device("iphone", p, site))

            // start → delivered (to the push-to-start token).
            #expect(try await Self.state(hub, Self.activity("start", ref: "job-1")) == .delivered)
            #expect(try await apns.requests().last?.path == "/3/device/\(PulseRelayRig.startToken)")
            // update before the activity reported its token: 429 → retry.
            #expect(try await Self.state(hub, Self.activity("update", ref: "job-1")) == .retry)
            try await p.activity(phone, site, ref: "job-1")
            try await Task.sleep(for: .milliseconds(1100))  // A's own one update per ref a second
            #expect(try await Self.state(hub, Self.activity("update", ref: "job-1", alert: "Ready")) == .delivered)
            #expect(try await apns.requests().last?.path == "/3/device/\(PulseRelayRig.activityToken)")

            // The activity's token is dead at APNs: 404 → A starts it again → delivered.
            let gone = String(repeating: "0d", count: 32)
            try await p.activity(phone, site, ref: "job-2", token: gone)
            try await apns.route("/3/device/\(gone)", [.json(410, #"{"reason":"Unregistered"}"#)])
            #expect(try await Self.state(hub, Self.activity("update", ref: "job-2")) == .delivered)
            let last = try #require(try await apns.requests().last)
            #expect(last.path == "/3/device/\(PulseRelayRig.startToken)")
            #expect(try JSONValue.parse(last.body)["aps"]?["event"] == "start")
            // An end for an activity that is gone: 404 → failed.
            #expect(try await Self.state(hub, Self.activity("end", ref: "job-9")) == .failed)

            // The relay holds a higher revision: 409, raised once, 409 again → retry.
            try await p.activity(phone, site, ref: "job-3")
            let ahead = Int64(Date().timeIntervalSince1970 + 86_400) * 1000
            #expect(try await p.push(site, PulseRelayRig.body(ref: "job-3", revision: ahead)).status == 200)
            #expect(try await Self.state(hub, Self.activity("update", ref: "job-3")) == .retry)

            // APNs throttles or fails: 429 / 503 → retry; APNs refuses the push: 400 → failed.
            for (ref, status, reason, expected) in [
                ("job-4", 429, "TooManyRequests", DeliveryState.retry), ("job-5", 503, "ServiceUnavailable", .retry),
                ("job-6", 400, "BadExpirationDate", .failed),
            ] {
                try await p.activity(phone, site, ref: ref)
                try await rig.apnsAnswers(status, reason)
                #expect(try await Self.state(hub, Self.activity("update", ref: ref)) == expected, "\(status) \(reason)")
            }
            try await rig.apnsAnswers(200)

            // The user disconnected the site: 403 → dead (A removes the device).
            #expect(
                try await p.call(
                    "DELETE", "/v1/pulse/devices/\(phone.deviceId)/sites/\(site.sourceId)", credential: phone.credential
                ).status == 200)
            #expect(try await Self.state(hub, Self.activity("update", ref: "job-7")) == .dead)

            // The phone was deleted: 410 → dead. Its push-to-start token refused by APNs: 410 → dead.
            let other = try await p.register(token: String(repeating: "0e", count: 32))
            let otherSite = try await p.mint(other)
            _ = try await hub.register(Self.device("ipad", p, otherSite))
            try await apns.route(
                "/3/device/" + String(repeating: "0e", count: 32), [.json(400, #"{"reason":"BadDeviceToken"}"#)])
            #expect(try await Self.state(hub, Self.activity("start", ref: "job-8")) == .dead)
            let third = try await p.register(token: String(repeating: "0f", count: 32))
            let thirdSite = try await p.mint(third)
            _ = try await hub.register(Self.device("watch", p, thirdSite))
            #expect(
                try await p.call("DELETE", "/v1/pulse/devices/\(third.deviceId)", credential: third.credential).status
                    == 200)
            #expect(try await Self.state(hub, Self.activity("start", ref: "job-8")) == .dead)
            // A key the relay never minted: 401 → dead.
            var forged = try await p.mint(try await p.register(token: String(repeating: "1a", count: 32)))
            forged.pushKey = Base64.urlEncode(SecureRandom.bytes(32))
            _ = try await hub.register(Self.device("forged", p, forged))
            #expect(try await Self.state(hub, Self.activity("start", ref: "job-10")) == .dead)
            await hub.shutdown()
        }
    }
}
