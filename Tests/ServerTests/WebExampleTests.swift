import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

/// Examples/web in headless Chromium (issue 36): the real page and service worker served by
/// `hub.py` in front of a real `herald serve`. The page fetches Herald's VAPID key (JSON behind the
/// hub's token), subscribes, and registers the subscription with `POST /v1/devices`; a push
/// delivered to the worker over the DevTools protocol is shown and reported `received` through
/// `POST /v1/notifications/{id}/events`. Only the browser's push service is faked (headless
/// Chromium has none): `Scripts/web_browser.py` replaces `PushManager.subscribe`. With a `local`
/// channel first (issue 35), the page holds the device's local stream through the hub (EventSource)
/// and confirms what comes down it, so Web Push is skipped.
@Suite("Web example in headless Chromium", .serialized)
struct WebExampleTests {
    static let root = ServeProcess.repositoryRoot

    /// A real `herald serve` with `channels` and `route` (YAML lines), the hub's token (scopes
    /// `devices`, `events`) and an admin token (`send`, `read`, `devices`), and `hub.py` in front of
    /// it; `body` gets them and the hub's URL. Both processes are stopped afterwards.
    static func withHub(
        channels: String, route: String,
        _ body: (ServeProcess, _ hub: RunningSubprocess, _ hubURL: String, _ adminToken: String) async throws -> Void
    ) async throws {
        let (hubToken, hubEntry) = ServeProcess.token(
            name: "hub", namespaces: ["default"], scopes: ["devices", "events"])
        let (adminToken, adminEntry) = ServeProcess.token(
            name: "admin", namespaces: ["default"], scopes: ["send", "read", "devices"])
        let serve = try ServeProcess { home, listen in
            """
            version: 1
            store: { path: \(home)/herald.db }
            server:
              listen: \(listen)
              tokens:
            \(hubEntry)
            \(adminEntry)
            channels:
            \(channels)
            routes:
              default:
            \(route)
            """
        }
        try await serve.start()
        var hub: RunningSubprocess?
        do {
            let started = try Subprocess.launch(
                executable: "python3", arguments: [Self.root + "/Examples/web/hub.py", "--port", "0"],
                environment: ["HERALD_URL": serve.baseURL, "HERALD_TOKEN": hubToken])
            hub = started
            let stderr = try await started.waitForStderr("listening on")
            let url = try #require(
                stderr.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression).map { String(stderr[$0]) }
            )
            try await body(serve, started, url, adminToken)
        } catch {
            _ = try? await hub?.kill()
            await serve.cleanUp()
            throw error
        }
        _ = try? await hub?.kill()
        await serve.cleanUp()
    }

    /// A call to `herald serve` with the admin token (curl `arguments`, the path last); its JSON.
    static func herald(_ serve: ServeProcess, _ token: String, _ arguments: [String]) throws -> JSONValue {
        let r = try Subprocess.run(
            executable: "curl",
            arguments: ["-sS", "-H", "Authorization: Bearer \(token)"] + arguments.dropLast()
                + [serve.baseURL + (arguments.last ?? "")])
        return try JSONValue.parse(r.stdout)
    }

    @Test func thePageRegistersWithHeraldAndTheWorkerReportsThroughTheEventsRoute() async throws {
        let channels = #"  webpush: { type: webpush, vapid: { subject: "mailto:ops@example.com" } }"#
        try await Self.withHub(channels: channels, route: "    - deliver: [webpush]") { serve, _, url, adminToken in
            func herald(_ arguments: [String]) throws -> JSONValue { try Self.herald(serve, adminToken, arguments) }
            let sent = try herald([
                "-H", "Content-Type: application/json", "-d", #"{"title":"Deploy?"}"#, "/v1/notifications?wait=none",
            ])
            let id = try #require(sent["id"]?.stringValue, "\(sent)")
            let payload = #"{"id":"\#(id)","title":"Deploy?","body":"to production","deviceId":"headless"}"#
            let r = try Subprocess.run(
                executable: "python3",
                arguments: [Self.root + "/Tests/ServerTests/Scripts/web_browser.py", url + "/", payload],
                environment: ["WAIT_URL": serve.baseURL + "/v1/notifications/\(id)", "WAIT_TOKEN": adminToken])
            let result = try JSONValue.parse(r.stdout.split(separator: "\n").last.map(String.init) ?? "")
            #expect(r.code == 0, "\(r.stdout) \(r.stderr)")
            #expect(result["status"]?.stringValue?.hasPrefix("Subscribed") == true, "\(result)")
            // No local channel serves the device: the page holds no stream.
            #expect(result["localStatus"] == nil)

            // The page subscribed with Herald's key, fetched as JSON through the hub.
            let key = try herald(["/v1/webpush/vapid-public-key"])
            #expect(result["subscription"]?["applicationServerKey"] == key["publicKey"])
            // Herald has the device, with the vapidKeyId the page computed; the page shows Herald's
            // answer: keys redacted, the endpoint shortened (issue 36).
            let device = try #require(result["device"])
            #expect(device["platform"] == "web")
            #expect(device["namespace"] == "default")
            #expect(device["subscription"]?["keys"] == ["p256dh": "‹redacted›", "auth": "‹redacted›"])
            #expect(device["subscription"]?["endpoint"] == "http…ss-1")
            let listed = try herald(["/v1/devices?namespace=default"])["devices"]?.arrayValue ?? []
            #expect(listed.count == 1)
            #expect(listed.first?["deviceId"] == device["deviceId"])
            let keyId = try #require(key["publicKey"]?.stringValue.map { try Base64.urlDecode($0) })
            let expected = String(Base64.urlEncode(SHA256.hash(keyId)).prefix(16))
            #expect(listed.first?["vapidKeyId"]?.stringValue == expected)
            // The worker showed the push and reported it in the shape the events route accepts.
            #expect(result["received"] == true, "\(result)")
            let events = try herald(["/v1/notifications/\(id)"])["events"]?.arrayValue ?? []
            #expect(events.first?["kind"] == "received")
            #expect(events.first?["deviceId"] == "headless")
        }
    }

    @Test func thePageHoldsTheLocalStreamAndConfirmsSoWebPushIsSkipped() async throws {
        let channels = """
              local: { type: local, platforms: [web], confirm: 20s }
              webpush: { type: webpush, vapid: { subject: "mailto:ops@example.com" } }
            """
        let route = """
                - deliver: [local, webpush]
                  mode: first
            """
        try await Self.withHub(channels: channels, route: route) { serve, hub, url, adminToken in
            let r = try Subprocess.run(
                executable: "python3",
                arguments: [Self.root + "/Tests/ServerTests/Scripts/web_browser.py", url + "/"],
                environment: [
                    "SEND_URL": serve.baseURL + "/v1/notifications", "SEND_TOKEN": adminToken,
                    "SEND_BODY": #"{"id":"local-1","title":"Deploy?","body":"to production"}"#,
                ])
            #expect(r.code == 0, "\(r.stdout) \(r.stderr)")
            let result = try JSONValue.parse(r.stdout.split(separator: "\n").last.map(String.init) ?? "")
            #expect(result["localStatus"]?.stringValue?.hasPrefix("Connected") == true, "\(result)")
            let deviceId = try #require(result["device"]?["deviceId"]?.stringValue, "\(result)")

            // The page showed the notification from its stream and confirmed it through the hub.
            let shown = result["shown"]?.arrayValue ?? []
            #expect(shown.count == 1, "\(result)")
            #expect(shown.first?["id"] == "local-1")
            #expect(shown.first?["confirmed"] == true)
            #expect(shown.first?["text"]?.stringValue?.hasPrefix("Deploy?: to production") == true)
            // So the waiting send's report has local delivered and Web Push never tried.
            let deliveries = result["report"]?["deliveries"]?.arrayValue ?? []
            let local = deliveries.first { $0["channel"] == "local" }
            let webpush = deliveries.first { $0["channel"] == "webpush" }
            #expect(local?["outcome"] == "delivered", "\(result)")
            #expect(local?["deviceId"]?.stringValue == deviceId)
            #expect(
                webpush != nil && webpush?["outcome"] != "delivered" && webpush?["outcome"] != "failed", "\(result)")
            // The confirmation is the page's received event, naming its device.
            let events = try Self.herald(serve, adminToken, ["/v1/notifications/local-1"])["events"]?.arrayValue ?? []
            #expect(events.contains { $0["kind"] == "received" && $0["deviceId"]?.stringValue == deviceId })
            // The hub passed the stream on and never logged its secret.
            #expect(hub.stderr.contains("/stream?token=‹redacted›"), "\(hub.stderr)")
            #expect(!hub.stderr.contains("hls_"), "\(hub.stderr)")
        }
    }
}
