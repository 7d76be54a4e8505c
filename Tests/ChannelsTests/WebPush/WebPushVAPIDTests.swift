import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting
import Testing

@testable import WebPushChannel

@Suite struct WebPushVAPIDTests {
    static let rfcHeader =
        "vapid t=eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE0NTM1MjM3NjgsInN1YiI6Im1haWx0bzpwdXNoQGV4YW1wbGUuY29tIn0.i3CYb7t4xfxCDquptFOepC9GAu_HLGkMlMuCGSK2rpiUfnK9ojFwDXb1JrErtmysazNjjvW2L9OkSSHzvoD1oA, k=BA1Hxzyi1RUM1b5wjxsn7nGxAszw2u61m164i3MrAIxHF6YK5h4SDYic-dRuU_RCPCfA5aq9ojSwk5Y2EmClBPs"

    @Test func rfc8292ExampleVerifies() throws {
        let token = String(Self.rfcHeader.dropFirst("vapid t=".count).prefix { $0 != "," })
        let k = String(Self.rfcHeader.split(separator: "k=").last ?? "")
        let key = try P256PublicKey(x963Representation: Base64.urlDecode(k))
        let payload = try JWS.verifyES256(token, publicKey: key)
        let claims = try JSONValue.parse(payload)
        #expect(claims["aud"]?.stringValue == "https://push.example.net")
        #expect(claims["exp"]?.intValue == 1_453_523_768)
        #expect(claims["sub"]?.stringValue == "mailto:push@example.com")
        let header = try Base64.urlDecode(String(token.prefix { $0 != "." }))
        #expect(header == VAPID.headerJSON)
        // One changed claim byte breaks the signature.
        var parts = token.split(separator: ".").map(String.init)
        var claimBytes = try Base64.urlDecode(parts[1])
        claimBytes[10] ^= 0x01
        parts[1] = Base64.urlEncode(claimBytes)
        #expect(throws: CryptoError.self) { _ = try JWS.verifyES256(parts.joined(separator: "."), publicKey: key) }
    }

    @Test func ownTokenVerifiesAndHeaderShape() throws {
        let key = try P256PrivateKey()
        let token = try VAPID.token(
            audience: "https://fcm.googleapis.com", expiresAt: 1_767_268_800, subject: "mailto:ops@example.com",
            key: key)
        let claims = try JSONValue.parse(try JWS.verifyES256(token, publicKey: key.publicKey))
        #expect(claims == ["aud": "https://fcm.googleapis.com", "exp": 1_767_268_800, "sub": "mailto:ops@example.com"])
        let sig = try Base64.urlDecode(String(token.split(separator: ".")[2]))
        #expect(sig.count == 64)
        let header = VAPID.authorization(token: token, publicKey: key.publicKey.x963Representation)
        #expect(header.hasPrefix("vapid t=\(token), k="))
        let k = String(header.split(separator: "k=").last ?? "")
        #expect(!k.contains("=") && k.count == 87)
    }

    @Test func audienceIsTheOrigin() {
        #expect(VAPID.audience(for: "https://fcm.googleapis.com/fcm/send/abc") == "https://fcm.googleapis.com")
        #expect(VAPID.audience(for: "https://push.example.com:8012/x/y") == "https://push.example.com:8012")
        #expect(VAPID.audience(for: "https://push.example.com:443/x") == "https://push.example.com")
        #expect(
            VAPID.audience(for: "https://Updates.Push.Services.Mozilla.com/wpush/v2/x")
                == "https://updates.push.services.mozilla.com")
        #expect(VAPID.audience(for: "http://127.0.0.1:80/p") == "http://127.0.0.1")
        #expect(VAPID.audience(for: "https://127.0.0.1:8443/p?q=1") == "https://127.0.0.1:8443")
        #expect(VAPID.audience(for: "https://[::1]:8443/p") == "https://[::1]:8443")
        #expect(VAPID.audience(for: "not a url") == nil)
    }

    @Test func subjectRules() {
        for good in ["mailto:ops@example.com", "https://example.com/contact", "mailto:push@sub.example.org"] {
            #expect(VAPID.subjectProblem(good) == nil, "\(good)")
        }
        for bad in [
            "", "ops@example.com", "mailto: <ops@example.com>", "mailto:<ops@example.com>", "mailto:ops @example.com",
            "mailto:admin@localhost", "https://localhost", "https://localhost:8443/x", "https://127.0.0.1/",
            "mailto:x@app.localhost", "http://example.com", "mailto:", "mailto:@example.com", "https://[::1]/",
        ] {
            #expect(VAPID.subjectProblem(bad) != nil, "\(bad)")
        }
    }

    @Test func tokenCacheReusesUntilShortlyBeforeExpiry() throws {
        let cache = VAPIDTokenCache()
        let ring = try VAPIDKeyRing.generate(now: 0)
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let first = try cache.authorization(
            audience: "https://a.example", key: ring.newest, subject: "mailto:o@example.com",
            lifetime: .seconds(43_200),
            now: start)
        let claims = try JSONValue.parse(try JWS.verifyES256(first.token, publicKey: ring.newest.privateKey.publicKey))
        #expect(claims["exp"]?.intValue == 1_767_225_600 + 43_200)
        let later = try cache.authorization(
            audience: "https://a.example", key: ring.newest, subject: "mailto:o@example.com",
            lifetime: .seconds(43_200),
            now: start.addingTimeInterval(43_200 - 601))
        #expect(later.token == first.token)
        let other = try cache.authorization(
            audience: "https://b.example", key: ring.newest, subject: "mailto:o@example.com",
            lifetime: .seconds(43_200),
            now: start)
        #expect(other.token != first.token)
        let refreshed = try cache.authorization(
            audience: "https://a.example", key: ring.newest, subject: "mailto:o@example.com",
            lifetime: .seconds(43_200),
            now: start.addingTimeInterval(43_200 - 599))
        #expect(refreshed.token != first.token)
        let c2 = try JSONValue.parse(try JWS.verifyES256(refreshed.token, publicKey: ring.newest.privateKey.publicKey))
        #expect(c2["exp"]?.intValue == 1_767_225_600 + 43_200 - 599 + 43_200)
    }

    @Test func keyRingRoundTripsAndRotates() throws {
        let state = InMemoryChannelState()
        let ring = try VAPIDKeyRing.loadOrCreate(from: state, now: 100)
        #expect(ring.keys.count == 1)
        #expect(try VAPIDKeyRing.loadOrCreate(from: state, now: 200).newest.publicKey == ring.newest.publicKey)
        let rotated = try VAPIDKeyRing.rotate(in: state, now: 300)
        #expect(rotated.keys.count == 2)
        #expect(rotated.keys[0].id == ring.newest.id)
        #expect(rotated.newest.id != ring.newest.id)
        let reloaded = try VAPIDKeyRing.loadOrCreate(from: state, now: 400)
        #expect(reloaded.keys.map(\.id) == rotated.keys.map(\.id))
        #expect(reloaded.newest.createdAt == 300)
        #expect(VAPIDKey.id(for: rotated.newest.publicKey) == rotated.newest.id)
    }

    @Test func corruptStateIsNeverOverwritten() throws {
        let good = try VAPIDKeyRing.generate(now: 1).encoded
        var tampered = try JSONValue.parse(good)
        if case .object(var o) = tampered, case .array(var keys)? = o["keys"], case .object(var k) = keys[0] {
            k["id"] = "AAAAAAAAAAAAAAAA"
            keys[0] = .object(k)
            o["keys"] = .array(keys)
            tampered = .object(o)
        }
        for bad in [Array("not json".utf8), Array(#"{"version":1,"keys":[]}"#.utf8), tampered.canonicalBytes] {
            let state = InMemoryChannelState()
            try state.setValue(bad, forKey: VAPIDKeyRing.stateKey)
            #expect(throws: WebPushError.self) { _ = try VAPIDKeyRing.loadOrCreate(from: state, now: 5) }
            #expect(throws: WebPushError.self) { _ = try VAPIDKeyRing.rotate(in: state, now: 5) }
            #expect(try state.value(forKey: VAPIDKeyRing.stateKey) == bad)
        }
    }
}
