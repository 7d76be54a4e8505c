import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTPTesting
import Testing

/// Examples/PulseSiteKit end to end (Pulse guide 二): a real `herald serve` with a pulse relay
/// channel pointed at a fake relay, the kit's site, and headless Chromium driven over the DevTools
/// protocol through fragment → login → allow → connect; then a Live Activity reaches the relay.
@Suite("Pulse site kit end to end (headless Chromium)", .serialized, .stopsFakeHTTPServers)
struct PulseSiteKitTests {
    static let root = ServeProcess.repositoryRoot
    static let site = root + "/Examples/PulseSiteKit/pulse_site.py"
    static let browser = root + "/Tests/ServerTests/Scripts/pulse_browser.py"
    static let key = Array(UInt8(100)...UInt8(131))
    static var pushKey: String { Base64.urlEncode(key) }

    /// Everything one test needs, stopped by `cleanUp`.
    struct Setup {
        let relay: FakeHTTPServer
        let serve: ServeProcess
        let token: String
        let siteProcess: RunningSubprocess
        let siteURL: String

        func cleanUp() async {
            _ = try? await siteProcess.kill()
            await serve.cleanUp()
        }

        /// `curl` with the site's Herald token, against herald serve.
        func herald(_ arguments: [String]) throws -> Subprocess.Result {
            try Subprocess.run(
                executable: "curl",
                arguments: ["-sS", "-H", "Authorization: Bearer \(token)"] + arguments.dropLast()
                    + [serve.baseURL + arguments.last!])
        }

        func devices() throws -> [JSONValue] {
            let r = try herald(["/v1/devices?namespace=user-alice"])
            return try JSONValue.parse(r.stdout)["devices"]?.arrayValue ?? []
        }

        /// `curl` against the site with a cookie jar (`jar`), printing the body then the status.
        func site(_ jar: String, _ arguments: [String], path: String) throws -> (body: String, status: Int) {
            let r = try Subprocess.run(
                executable: "curl",
                arguments: ["-sS", "-b", jar, "-c", jar, "-w", "\n%{http_code}"] + arguments + [siteURL + path])
            let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (lines.dropLast().joined(separator: "\n"), Int(lines.last ?? "") ?? 0)
        }
    }

    /// `pulseRelay` replaces the fake relay with a real one (its base URL and the CA file that
    /// trusts it): PulseRelaySiteKitTests runs the kit against Herald's own Pulse relay.
    static func setUp(pulseRelay: (url: String, caFile: String)? = nil) async throws -> Setup {
        let relay = try await FakeHTTPServer.start()
        try await relay.route("/v1/devices/", [.json(200, #"{"ok":true}"#)])
        let (relayURL, relayCA) = pulseRelay ?? (relay.baseURL, relay.caFile)
        let (token, entry) = ServeProcess.token(
            name: "shop", namespaces: ["user-*"], scopes: ["devices", "send", "read"])
        let serve = try ServeProcess { home, listen in
            """
            version: 1
            store: { path: \(home)/herald.db }
            tls: { ca-file: \(relayCA) }
            server:
              listen: \(listen)
              tokens:
            \(entry)
            channels:
              pulse:
                type: relay
                protocol: pulse
                current-relay: "\(relayURL)"
                allowed-relays: ["\(relayURL)", "https://relay.crsyounen.com", "https://pulse-relay.crsyounen.workers.dev"]
            routes:
              default:
                - deliver: [pulse]
            """
        }
        try await serve.start()
        let site: RunningSubprocess
        do {
            site = try Subprocess.launch(
                executable: "python3", arguments: [Self.site, "--port", "0", "--name", "Example Shop"],
                environment: [
                    "HERALD_URL": serve.baseURL, "HERALD_TOKEN": token, "SITE_USERS": "alice:wonderland",
                    // Plain http on 127.0.0.1 in the test; the kit sets Secure cookies by default.
                    "SITE_INSECURE_COOKIES": "1",
                ])
        } catch {
            await serve.cleanUp()
            throw error
        }
        let stderr = try await site.waitForStderr("listening on")
        guard let range = stderr.range(of: #"http://127\.0\.0\.1:[0-9]+"#, options: .regularExpression) else {
            _ = try? await site.kill()
            await serve.cleanUp()
            throw SubprocessError("the site did not start: \(stderr)")
        }
        return Setup(relay: relay, serve: serve, token: token, siteProcess: site, siteURL: String(stderr[range]))
    }

    /// The authorize URL the App opens: the connection data after `#`.
    static func authorizeURL(
        _ setup: Setup, deviceId: String, state: String, sourceId: String = "s_7Kq", key: String = pushKey
    ) -> String {
        var fragment = URLComponents()
        fragment.queryItems = [
            URLQueryItem(name: "relay", value: "https://relay.crsyounen.com"),
            URLQueryItem(name: "deviceId", value: deviceId), URLQueryItem(name: "sourceId", value: sourceId),
            URLQueryItem(name: "pushKey", value: key), URLQueryItem(name: "deviceName", value: "iPhone"),
            URLQueryItem(name: "state", value: state),
        ]
        return setup.siteURL + "/pulse-relay/authorize#" + (fragment.percentEncodedQuery ?? "")
    }

    static func runBrowser(_ url: String, choice: String) throws -> JSONValue {
        let r = try Subprocess.run(executable: "python3", arguments: [browser, url, "alice", "wonderland", choice])
        let result = try JSONValue.parse(r.stdout.split(separator: "\n").last.map(String.init) ?? "")
        #expect(r.code == 0, "\(r.stdout) \(r.stderr)")
        return result
    }

    @Test func fragmentLoginAllowConnectThenALiveActivityReachesTheRelay() async throws {
        let setup = try await Self.setUp()
        do {
            // The well-known document (guide 二.1).
            let jar = setup.serve.home + "/cookies"
            let wellKnown = try setup.site(jar, [], path: "/.well-known/pulse-relay.json")
            #expect(wellKnown.status == 200)
            let doc = try JSONValue.parse(wellKnown.body)
            #expect(doc["version"] == 1)
            #expect(doc["name"] == "Example Shop")
            #expect(doc["authorize"] == "/pulse-relay/authorize")
            #expect(doc["connect"] == "/api/pulse-relay/connect")

            // The browser: fragment kept across the login, allow, back to the App.
            let result = try Self.runBrowser(
                Self.authorizeURL(setup, deviceId: "8d3f01", state: "st-123"), choice: "allow")
            #expect(result["redirect"] == "pulserelay://site-connected?state=st-123&status=ok")
            #expect(result["afterLoad"]?["hash"] == "")  // taken off the address bar at once
            #expect(result["afterLoad"]?["loginShown"] == true)
            #expect(result["afterLogin"]?["askShown"] == true)
            #expect(result["afterLogin"]?["device"] == "iPhone")  // the fragment survived the login

            // Herald has the device, in the user's namespace, without echoing the key.
            let devices = try setup.devices()
            #expect(devices.count == 1)
            let device = try #require(devices.first)
            #expect(device["platform"] == "pulse")
            #expect(device["deviceId"] == "8d3f01")
            #expect(device["relayDeviceId"] == "8d3f01")
            #expect(device["sourceId"] == "s_7Kq")
            #expect(device["relay"] == "https://relay.crsyounen.com")
            #expect(!(try setup.herald(["/v1/devices?namespace=user-alice"]).stdout.contains(Self.pushKey)))
            #expect(device["pushKey"] == "‹redacted›")  // issue 36: not even its first and last 4

            // A Live Activity through the site reaches the (fake) relay, signed with the device's key.
            let login = try setup.site(jar, ["-d", "username=alice&password=wonderland"], path: "/login")
            #expect(login.status == 303)
            let activity =
                #"{"ref":"order-1024","event":"start","contentState":{"title":"Order #1024","summary":"Picked up","status":"running","revision":1793000000123},"alert":{"body":"Picked up"}}"#
            let push = try setup.site(
                jar, ["-H", "Content-Type: application/json", "-d", activity], path: "/demo/push")
            #expect(push.status == 200, "\(push.body)")
            let report = try JSONValue.parse(push.body)
            #expect(report["report"]?["deliveries"]?.arrayValue?.first?["outcome"] == "delivered", "\(push.body)")
            let requests = try await setup.relay.requests()
            let r = try #require(requests.first)
            #expect(requests.count == 1)
            #expect(r.path == "/v1/devices/8d3f01/push")
            #expect(r.header("x-pulse-source") == "s_7Kq")
            let body = try JSONValue.parse(r.body)
            #expect(body["ref"] == "order-1024")
            #expect(body["event"] == "start")
            #expect(body["contentState"]?["revision"] == 1_793_000_000_123)
            let auth = try #require(r.header("x-pulse-auth")).split(separator: " ").map(String.init)
            try #require(auth.count == 4)
            let digest = SHA256.hash(r.body).map { String(format: "%02x", $0) }.joined()
            let mac = HMACSHA256.authenticationCode(
                key: Self.key, message: Array("POST\n\(r.path)\n\(auth[1])\n\(auth[2])\n\(digest)".utf8))
            #expect(auth[0] == "v2")
            #expect(auth[3] == Base64.urlEncode(mac))

            // DELETE {connect} removes it; a repeat is still 200 (guide 二.4).
            let removeBody = #"{"deviceId":"8d3f01","sourceId":"s_7Kq"}"#
            let headers = ["-X", "DELETE", "-H", "X-Pulse-Relay: 1", "-H", "Content-Type: application/json", "-d"]
            let removed = try setup.site(jar, headers + [removeBody], path: "/api/pulse-relay/connect")
            #expect(removed.status == 200)
            #expect(try setup.devices().isEmpty)
            let again = try setup.site(jar, headers + [removeBody], path: "/api/pulse-relay/connect")
            #expect(again.status == 200)

            // The push key was never logged by the site or Herald.
            #expect(!setup.siteProcess.stderr.contains(Self.pushKey))
            #expect(!(setup.serve.process?.stderr.contains(Self.pushKey) ?? true))
        } catch {
            await setup.cleanUp()
            throw error
        }
        await setup.cleanUp()
    }

    @Test func denyReturnsDeniedAndRegistersNothing() async throws {
        let setup = try await Self.setUp()
        do {
            let result = try Self.runBrowser(
                Self.authorizeURL(setup, deviceId: "other-1", state: "st-9"), choice: "deny")
            #expect(result["redirect"] == "pulserelay://site-connected?state=st-9&status=denied")
            #expect(try setup.devices().isEmpty)
        } catch {
            await setup.cleanUp()
            throw error
        }
        await setup.cleanUp()
    }

    @Test func connectRefusesWhatTheGuideSaysToRefuse() async throws {
        let setup = try await Self.setUp()
        do {
            let jar = setup.serve.home + "/cookies"
            let body =
                #"{"relay":"https://relay.crsyounen.com","deviceId":"d1","sourceId":"s1","pushKey":"\#(Self.pushKey)","deviceName":"iPhone"}"#
            let json = ["-H", "Content-Type: application/json"]
            let marker = ["-H", "X-Pulse-Relay: 1"]
            // Not logged in.
            #expect(try setup.site(jar, marker + json + ["-d", body], path: "/api/pulse-relay/connect").status == 401)
            #expect(try setup.site(jar, ["-d", "username=alice&password=nope"], path: "/login").status == 401)
            #expect(try setup.site(jar, ["-d", "username=alice&password=wonderland"], path: "/login").status == 303)
            // Without X-Pulse-Relay: 1 (a form from another site cannot set it).
            #expect(try setup.site(jar, json + ["-d", body], path: "/api/pulse-relay/connect").status == 403)
            // A form post, not JSON.
            #expect(
                try setup.site(
                    jar, marker + ["-H", "Content-Type: text/plain", "-d", body], path: "/api/pulse-relay/connect"
                ).status == 415)
            // A relay the site does not know never gets the key.
            let evil = body.replacingOccurrences(of: "https://relay.crsyounen.com", with: "https://relay.evil.example")
            #expect(try setup.site(jar, marker + json + ["-d", evil], path: "/api/pulse-relay/connect").status == 400)
            #expect(try setup.devices().isEmpty)
            // The legacy relay address is accepted (guide 二.3); pushes still go to the current relay.
            let legacy = body.replacingOccurrences(
                of: "https://relay.crsyounen.com", with: "https://pulse-relay.crsyounen.workers.dev")
            let ok = try setup.site(jar, marker + json + ["-d", legacy], path: "/api/pulse-relay/connect")
            #expect(ok.status == 200)
            #expect(try JSONValue.parse(ok.body) == ["ok": true])
            #expect(try setup.devices().count == 1)
        } catch {
            await setup.cleanUp()
            throw error
        }
        await setup.cleanUp()
    }

    /// Issue 36: with Herald down, `connect` and `DELETE {connect}` answer the intended 502 with a JSON
    /// body (not an empty reply and a traceback), the page then reports `code=502`, and the site
    /// keeps serving.
    @Test func heraldDownIsA502NotAnEmptyReply() async throws {
        let setup = try await Self.setUp()
        do {
            let jar = setup.serve.home + "/cookies"
            #expect(try setup.site(jar, ["-d", "username=alice&password=wonderland"], path: "/login").status == 303)
            let stopped = try await setup.serve.stop()
            #expect(stopped?.code == 0)
            let body =
                #"{"relay":"https://relay.crsyounen.com","deviceId":"d1","sourceId":"s1","pushKey":"\#(Self.pushKey)","deviceName":"iPhone"}"#
            let headers = ["-H", "X-Pulse-Relay: 1", "-H", "Content-Type: application/json"]
            let connect = try setup.site(jar, headers + ["-d", body], path: "/api/pulse-relay/connect")
            #expect(connect.status == 502, "\(connect.body)")
            #expect(try JSONValue.parse(connect.body)["error"] == "could not save the connection")
            let remove = try setup.site(
                jar, ["-X", "DELETE"] + headers + ["-d", #"{"deviceId":"d1","sourceId":"s1"}"#],
                path: "/api/pulse-relay/connect")
            #expect(remove.status == 502, "\(remove.body)")
            #expect(!setup.siteProcess.stderr.contains("Traceback"), "\(setup.siteProcess.stderr)")
            #expect(setup.siteProcess.stderr.contains("Herald unreachable"))
            #expect(!setup.siteProcess.stderr.contains(Self.pushKey))
            // Still serving.
            #expect(try setup.site(jar, [], path: "/.well-known/pulse-relay.json").status == 200)
        } catch {
            await setup.cleanUp()
            throw error
        }
        await setup.cleanUp()
    }

    /// Issue 36: `safe_next` refuses the usual open-redirect and header-injection bypass list (tab,
    /// CR/LF, `//`, `/\\`, `/%2F`, double-encoded forms) and keeps plain paths, checked by
    /// `Scripts/pulse_next_check.py` on the kit's own function, as `?next=` arrives.
    @Test func nextRefusesEveryRedirectOffTheSite() throws {
        let r = try Subprocess.run(
            executable: "python3",
            arguments: [
                Self.root + "/Tests/ServerTests/Scripts/pulse_next_check.py", Self.root + "/Examples/PulseSiteKit",
            ])
        #expect(r.code == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.hasPrefix("ok 27 7"), "\(r.stdout)")
    }
}
