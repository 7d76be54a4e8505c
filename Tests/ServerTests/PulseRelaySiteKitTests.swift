import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

/// The whole chain with nothing faked but Apple: Herald's Pulse relay (B) mints a site key through
/// its app API; Examples/PulseSiteKit's connect flow runs in headless Chromium with that key in the
/// `authorize` fragment; the site's Herald (A, `herald serve` with a pulse relay channel whose
/// current relay is B) sends a Live Activity, and it reaches the fake APNs as a liveactivity push.
@Suite("Pulse site kit through Herald's Pulse relay (headless Chromium)", .serialized, .stopsFakeHTTPServers)
struct PulseRelaySiteKitTests {
    @Test func connectWithARelayMintedKeyThenAStartReachesAPNs() async throws {
        try await RelayRig.with(relays: try PulseRelayRig.relays(), withHub: false, tls: true) { rig in
            try await rig.apnsAnswers(200)
            let p = PulseRelayRig(rig: rig)
            let phone = try await p.register()
            let minted = try await p.mint(phone)
            let setup = try await PulseSiteKitTests.setUp(pulseRelay: (rig.base, rig.home + "/tls-cert.pem"))
            do {
                let url = PulseSiteKitTests.authorizeURL(
                    setup, deviceId: minted.deviceId, state: "st-9", sourceId: minted.sourceId, key: minted.pushKey)
                let result = try PulseSiteKitTests.runBrowser(url, choice: "allow")
                #expect(result["redirect"] == "pulserelay://site-connected?state=st-9&status=ok")

                let jar = setup.serve.home + "/cookies"
                let login = try setup.site(jar, ["-d", "username=alice&password=wonderland"], path: "/login")
                #expect(login.status == 303)
                let activity =
                    #"{"ref":"order-1024","event":"start","contentState":{"title":"Order #1024","summary":"Picked up","status":"running"},"alert":{"body":"Picked up"}}"#
                let push = try setup.site(
                    jar, ["-H", "Content-Type: application/json", "-d", activity], path: "/demo/push")
                #expect(push.status == 200, "\(push.body)")
                let report = try JSONValue.parse(push.body)
                #expect(
                    report["report"]?["deliveries"]?.arrayValue?.first?["outcome"] == "delivered", "\(push.body)")

                let sent = try await rig.apns.requests()
                #expect(sent.count == 1)
                let apns = try #require(sent.first)
                #expect(apns.path == "/3/device/\(PulseRelayRig.startToken)")
                #expect(apns.header("apns-push-type") == "liveactivity")
                let aps = try #require(try JSONValue.parse(apns.body)["aps"])
                #expect(aps["event"] == "start")
                #expect(aps["attributes"] == ["site": "Example Shop", "ref": "order-1024"])
                #expect(aps["alert"]?["body"] == "Picked up")
                #expect(!(setup.serve.process?.stderr.contains(minted.pushKey) ?? true))
                #expect(!rig.relayLog.text.contains(minted.pushKey))
            } catch {
                await setup.cleanUp()
                throw error
            }
            await setup.cleanUp()
        }
    }
}
