import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import APNsChannel

@Suite("APNs provider token")
struct APNsProviderTokenTests {
    @Test func shapeAndSignatureVerifiedWithPyJWT() throws {
        let key = try P256PrivateKey()
        let iat = Int64(1_767_225_600)
        let token = try APNsProviderToken.sign(key: key, keyID: "ABC123DEFG", teamID: "TEAM123456", issuedAt: iat)
        let parts = token.jwt.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(try JSONValue.parse(try Base64.urlDecode(parts[0])) == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(try JSONValue.parse(try Base64.urlDecode(parts[1])) == ["iss": "TEAM123456", "iat": 1_767_225_600])
        #expect(try Base64.urlDecode(parts[2]).count == 64)
        _ = try JWS.verifyES256(token.jwt, publicKey: key.publicKey)

        let dir = try APNsTestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let jwkPath = dir.appendingPathComponent("pub.jwk").path
        try JSONEncoder().encode(key.publicKey.jwk).write(to: URL(fileURLWithPath: jwkPath))
        let tokenPath = dir.appendingPathComponent("token").path
        try Data(token.jwt.utf8).write(to: URL(fileURLWithPath: tokenPath))
        let out = try APNsTestSupport.python("apns_verify_jwt.py", [jwkPath, tokenPath])
        let parsed = try JSONValue.parse(out.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(parsed["header"] == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(parsed["claims"] == ["iss": "TEAM123456", "iat": 1_767_225_600])

        // A tampered token fails pyjwt.
        let tampered =
            parts[0] + "." + Base64.urlEncode(Array("{\"iat\":1767225600,\"iss\":\"EVIL\"}".utf8)) + "."
            + parts[2]
        try Data(tampered.utf8).write(to: URL(fileURLWithPath: tokenPath))
        #expect(throws: TestFailure.self) { try APNsTestSupport.python("apns_verify_jwt.py", [jwkPath, tokenPath]) }
    }

    @Test func policy() throws {
        let key = try P256PrivateKey()
        let t = try APNsProviderToken.sign(key: key, keyID: "K", teamID: "T", issuedAt: 1000)
        #expect(APNsProviderToken.decide(stored: nil, now: 1000, keyID: "K", teamID: "T") == .mint)
        #expect(APNsProviderToken.decide(stored: t, now: 1000 + 49 * 60, keyID: "K", teamID: "T") == .reuse(t))
        #expect(APNsProviderToken.decide(stored: t, now: 1000 + 50 * 60, keyID: "K", teamID: "T") == .mint)
        #expect(APNsProviderToken.decide(stored: t, now: 10, keyID: "K", teamID: "T") == .reuse(t))  // clock went back
        #expect(APNsProviderToken.decide(stored: t, now: 1000, keyID: "K2", teamID: "T") == .mint)
        #expect(APNsProviderToken.decide(stored: t, now: 1000, keyID: "K", teamID: "T2") == .mint)
        #expect(APNsProviderToken.decide(stored: t, now: 1000, keyID: "K", teamID: "T", replacing: t.jwt) == .mint)
        #expect(APNsProviderToken.decide(stored: t, now: 1000, keyID: "K", teamID: "T", replacing: "old") == .reuse(t))
        #expect(APNsProviderToken(stateJSON: t.stateJSON) == t)
    }

    @Test func sharedThroughStateAcrossProcesses() throws {
        let key = try P256PrivateKey()
        let state = InMemoryChannelState()
        let clock = ManualClock()
        let context = APNsTestSupport.context(http: ScriptedTransport(), clock: clock, state: state)
        // Two providers on one state store stand for two short-lived `herald` processes.
        let a = APNsTokenProvider(key: key, keyID: "K", teamID: "T", context: context)
        let b = APNsTokenProvider(key: key, keyID: "K", teamID: "T", context: context)
        let first = try a.token()
        #expect(try b.token() == first)
        #expect(state.keys == [APNsTokenProvider.stateKey])
        clock.advance(by: .seconds(49 * 60))
        #expect(try a.token() == first)
        #expect(try b.token() == first)
        clock.advance(by: .seconds(60))
        let second = try b.token()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt + 50 * 60)
        #expect(try a.token() == second)
        // ExpiredProviderToken: the first to report it renews; a second report of the same old token reuses.
        clock.advance(by: .seconds(25 * 60))
        let third = try a.token(replacing: second.jwt)
        #expect(third != second)
        #expect(try b.token(replacing: second.jwt) == third)
    }
}
