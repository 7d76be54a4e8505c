import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import RelayChannel

@Suite("Relay protocol openchamber")
struct OpenChamberRelayTests {
    /// A fixed key (d = 0x01…0x20) and its thumbprint, computed independently with Python.
    static let fixedD = Array(UInt8(1)...UInt8(32))
    static let fixedThumbprint = "6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM"
    static let fixedX = "UVw9brnjlrkE0_7Kf1T9zQzB6Ze_N13KUVrQpsO0A18"

    static func stateWithFixedKey() throws -> InMemoryChannelState {
        let state = InMemoryChannelState()
        let key = try P256PrivateKey(rawRepresentation: fixedD)
        try state.setValue(Array(try JSONEncoder().encode(key.jwk)), forKey: OpenChamberRelay.stateKey)
        return state
    }

    static func token(_ i: Int) -> String { String(format: "%064x", i) }

    let notification = HeraldNotification(
        type: "permission-request", title: "secret title", body: "secret body",
        data: ["sessionId": "s-1", "sessionName": "build"], badge: 3)

    @Test func signingInputsAreExact() {
        #expect(
            OpenChamberSigning.registerInput(ts: 1_767_225_600_000, token: "abc", platform: "ios")
                == "1767225600000.abc.ios")
        #expect(OpenChamberSigning.sendInput(ts: 5, tokens: ["b", "a", "B", "é", "z"], title: "T") == "5.B,a,b,z,é.T")
        // UTF-16 code-unit order (JavaScript's sort): U+1F600 is the surrogate pair D83D DE00, which
        // sorts before U+FF5E, although its scalar value is larger.
        #expect(OpenChamberSigning.sortedForSigning(["\u{FF5E}", "\u{1F600}"]) == ["\u{1F600}", "\u{FF5E}"])
        #expect(OpenChamberSigning.registerURL("https://r.example/api/send") == "https://r.example/api/register-token")
        #expect(OpenChamberSigning.registerURL("https://r.example/push") == "https://r.example/push/register-token")
    }

    @Test func fixedKeyThumbprintAndSignaturesVerifyInPython() async throws {
        let key = try P256PrivateKey(rawRepresentation: Self.fixedD)
        #expect(OpenChamberSigning.serverId(key) == Self.fixedThumbprint)
        let inputs = [
            OpenChamberSigning.registerInput(ts: 1_767_225_600_000, token: Self.token(1), platform: "ios"),
            OpenChamberSigning.sendInput(ts: 1_767_225_600_000, tokens: [Self.token(2), Self.token(1)], title: "Hi"),
        ]
        let items: [JSONValue] = try inputs.map { input in
            ["input": .string(input), "sig": .string(try OpenChamberSigning.sign(input, key: key))]
        }
        let doc: JSONValue = ["jwk": OpenChamberSigning.publicJWK(key), "items": .array(items)]
        let out = try APNsTestSupport.python("relay_openchamber_verify.py", [], stdin: doc.canonicalString)
        #expect(out.trimmingCharacters(in: .whitespacesAndNewlines) == Self.fixedThumbprint)
    }

    @Test func keyCreatedOnceAndPublicKeyExposed() async throws {
        let setup = try RelaySetup.make("type: relay\nprotocol: openchamber\nurl: {URL}/send")
        #expect(try setup.state.value(forKey: OpenChamberRelay.stateKey) == nil)
        let first = try await setup.channel.publicKey(rotate: false)
        let stored = try setup.state.value(forKey: OpenChamberRelay.stateKey)
        #expect(stored != nil)
        #expect(try await setup.channel.publicKey(rotate: false) == first)
        let o = try JSONValue.parse(first).objectValue ?? [:]
        #expect(Set(o.keys) == ["kty", "crv", "x", "y", "serverId"])
        let jwk = JWK(x: o["x"]?.stringValue ?? "", y: o["y"]?.stringValue ?? "")
        #expect(o["serverId"]?.stringValue == jwk.thumbprint)
        await #expect(throws: RelayKeyError.self) { try await setup.channel.publicKey(rotate: true) }
        #expect(try setup.state.value(forKey: OpenChamberRelay.stateKey) == stored)
    }

    @Test func corruptStoredKeyFailsLoudlyAndIsKept() async throws {
        let state = InMemoryChannelState()
        try state.setValue(Array("not a key".utf8), forKey: OpenChamberRelay.stateKey)
        let setup = try RelaySetup.make("type: relay\nprotocol: openchamber\nurl: {URL}/send", state: state)
        setup.http.route("/send", [.json(200, "{\"results\":[]}")])
        let d = RelayTest.ios("d", token: Self.token(1))
        let results = await setup.channel.deliver(
            DeliveryRequest(notification: notification, targets: [RelayTest.target(d)]))
        #expect(results.map { $0.outcome } == [DeliveryOutcome.failed])
        #expect(results.first?.reason?.contains("corrupt") == true)
        await #expect(throws: RelayKeyError.self) { try await setup.channel.publicKey(rotate: false) }
        #expect(try state.value(forKey: OpenChamberRelay.stateKey) == Array("not a key".utf8))
        #expect(setup.http.requests.isEmpty)
        #expect(setup.sink.all.contains { $0.level == .error })
    }

    @Test func registerTokenIsSignedAndTokenNotLogged() async throws {
        let setup = try RelaySetup.make(
            "type: relay\nprotocol: openchamber\nurl: {URL}/send", state: try Self.stateWithFixedKey())
        setup.http.route("/register-token", [.json(500, "{\"error\":\"down\"}")])
        let d = RelayTest.ios("d", token: Self.token(7))
        await setup.channel.didRegister(d)
        let requests = setup.http.requests
        #expect(requests.map(\.path) == ["/register-token"])
        let o = try RelayTest.object(requests[0].body)
        #expect(Set(o.keys) == ["token", "platform", "publicKeyJwk", "ts", "sig"])
        #expect(o["ts"]?.intValue == 1_767_225_600_000)
        #expect(o["platform"] == "ios")
        #expect(o["publicKeyJwk"]?["x"]?.stringValue == Self.fixedX)
        let input = "1767225600000.\(Self.token(7)).ios"
        let doc: JSONValue = [
            "jwk": o["publicKeyJwk"] ?? .null, "items": [["input": .string(input), "sig": o["sig"] ?? .null]],
        ]
        let thumb = try APNsTestSupport.python("relay_openchamber_verify.py", [], stdin: doc.canonicalString)
        #expect(thumb.trimmingCharacters(in: .whitespacesAndNewlines) == Self.fixedThumbprint)
        #expect(setup.sink.all.contains { $0.message.contains("register-token") })
        #expect(!setup.sink.text.contains(Self.token(7)))
    }

    @Test func batchesOf100PerEnvironmentAndSignaturesVerify() async throws {
        let setup = try RelaySetup.make(
            "type: relay\nprotocol: openchamber\nurl: {URL}/send", state: try Self.stateWithFixedKey())
        // The fake answers ok for no token at all; every token then is "missing" → retry. Use a
        // second pass with explicit results below; here check the request side.
        setup.http.route("/send", [.json(200, "{\"results\":[]}")])
        var targets: [DeliveryTarget] = []
        for i in 0..<250 { targets.append(RelayTest.target(RelayTest.ios("p\(i)", token: Self.token(i)), i)) }
        for i in 250..<260 {
            targets.append(RelayTest.target(RelayTest.ios("s\(i)", token: Self.token(i), environment: "sandbox"), i))
        }
        let results = await setup.channel.deliver(DeliveryRequest(notification: notification, targets: targets))
        #expect(results.count == 260)
        #expect(results.allSatisfy { $0.outcome == DeliveryOutcome.retry })
        let requests = setup.http.requests
        #expect(requests.count == 4)
        var seen: [String: String] = [:]
        var items: [JSONValue] = []
        for r in requests {
            let o = try RelayTest.object(r.body)
            let tokens = (o["tokens"]?.arrayValue ?? []).compactMap(\.stringValue)
            #expect(tokens.count <= 100)
            let env = o["env"]?.stringValue ?? ""
            for t in tokens { seen[t] = env }
            #expect(o["title"]?.stringValue == "Agent needs permission")
            #expect(o["body"]?.stringValue == "build")
            #expect(o["badge"]?.intValue == 3)
            #expect(o["collapseId"]?.stringValue == "permission-request-s-1")
            #expect(o["data"] == ["sessionId": "s-1"])
            #expect(o["ts"]?.intValue == 1_767_225_600_000)
            let input = OpenChamberSigning.sendInput(
                ts: 1_767_225_600_000, tokens: tokens, title: "Agent needs permission")
            items.append(["input": .string(input), "sig": o["sig"] ?? .null])
            #expect(!r.bodyText.contains("secret"))
        }
        #expect(seen.count == 260)
        #expect((0..<250).allSatisfy { seen[Self.token($0)] == "production" })
        #expect((250..<260).allSatisfy { seen[Self.token($0)] == "sandbox" })
        let key = try P256PrivateKey(rawRepresentation: Self.fixedD)
        let doc: JSONValue = ["jwk": OpenChamberSigning.publicJWK(key), "items": .array(items)]
        let thumb = try APNsTestSupport.python("relay_openchamber_verify.py", [], stdin: doc.canonicalString)
        #expect(thumb.trimmingCharacters(in: .whitespacesAndNewlines) == Self.fixedThumbprint)
    }

    @Test func perTokenResults() async throws {
        let setup = try RelaySetup.make(
            "type: relay\nprotocol: openchamber\nurl: {URL}/send", state: try Self.stateWithFixedKey())
        let answer = """
            {"results":[{"token":"\(Self.token(1))","ok":true},{"token":"\(Self.token(2))","ok":false,"drop":true},
            {"token":"\(Self.token(3))","ok":false}]}
            """
        setup.http.route("/send", [.json(200, answer)])
        let targets = (1...4).map { RelayTest.target(RelayTest.ios("d\($0)", token: Self.token($0)), $0) }
        let results = await setup.channel.deliver(DeliveryRequest(notification: notification, targets: targets))
        var byDevice: [String: DeliveryOutcome] = [:]
        for r in results { byDevice[r.deviceId ?? ""] = r.outcome }
        let expected: [String: DeliveryOutcome] = ["d1": .delivered, "d2": .dead, "d3": .retry, "d4": .retry]
        #expect(byDevice == expected)
    }

    @Test func non2xxRetriesTheWholeBatch() async throws {
        let setup = try RelaySetup.make(
            "type: relay\nprotocol: openchamber\nurl: {URL}/send", state: try Self.stateWithFixedKey())
        setup.http.route("/send", [.json(503, "{\"error\":\"busy\"}", headers: ["retry-after": "9"])])
        let targets = (1...3).map { RelayTest.target(RelayTest.ios("d\($0)", token: Self.token($0)), $0) }
        let results = await setup.channel.deliver(DeliveryRequest(notification: notification, targets: targets))
        #expect(results.count == 3)
        for r in results {
            #expect(r.outcome == DeliveryOutcome.retry)
            #expect(r.retryAfter == Duration.seconds(9))
            #expect(r.status == 503)
        }
    }
}
