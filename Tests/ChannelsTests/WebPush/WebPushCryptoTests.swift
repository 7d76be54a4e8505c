import ChannelAPI
import Foundation
import HeraldCrypto
import Testing

@testable import WebPushChannel

func b64u(_ s: String) -> [UInt8] { (try? Base64.urlDecode(s)) ?? [] }

func hex(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex {
        let j = s.index(i, offsetBy: 2)
        out.append(UInt8(s[i..<j], radix: 16) ?? 0)
        i = j
    }
    return out
}

/// RFC 8291 Appendix A, RFC 8188 §3.1/§3.2.
enum RFC8291 {
    static let plaintext = b64u("V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24")
    static let asPublic = b64u(
        "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    static let asPrivate = b64u("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let uaPublic = b64u(
        "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let uaPrivate = b64u("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
    static let salt = b64u("DGv6ra1nlYgDCS1FRnbzlw")
    static let auth = b64u("BTBZMqHH6r4Tts7J_aSIgg")
    static let ecdh = b64u("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs")
    static let prkKey = b64u("Snr3JMxaHVDXHWJn5wdC52WjpCtd2EIEGBykDcZW32k")
    static let keyInfo = b64u(
        "V2ViUHVzaDogaW5mbwAEJXGyvs3942BVGq8e0PTNNmwRzr5VX4m8t7GGpTM5FzFo7OLr4BhZe9MEebhuPI-OztV3ylkYfpJGmQ22ggCLDgT-M_SrDepxkU21WCP3O1SUj0EwbZIHMtu5pZpTKGSCIA5Zent7wmC6HCJ5mFgJkuk5cwAvMBKiiujwa7t45ewP"
    )
    static let ikm = b64u("S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg")
    static let prk = b64u("09_eUZGrsvxChDCGRCdkLiDXrReGOEVeSCdCcPBSJSc")
    static let cek = b64u("oIhVW04MRdy2XN9CiKLxTg")
    static let nonce = b64u("4h_95klXJ5E_qnoN")
    static let body = hex(
        "0c6bfaadad67958803092d454676f397000010004104fe33f4ab0dea71914db55823f73b54948f41306d920732dbb9a59a53286482200e597a7b7bc260ba1c227998580992e93973002f3012a28ae8f06bbb78e5ec0ff297de5b429bba7153d3a4ae0caa091fd425f3b4b5414add8ab37a19c1bbb05cf5cb5b2a2e0562d558635641ec52812c6c8ff42e95ccb86be7cd"
    )
    static let bodyB64 =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func subscriber() throws -> WebPushSubscriberKey {
        try WebPushSubscriberKey(publicKey: P256PublicKey(x963Representation: uaPublic), authSecret: auth)
    }
}

@Suite struct WebPushCryptoTests {
    @Test func rfc8291IntermediateValues() throws {
        let asKey = try P256PrivateKey(rawRepresentation: RFC8291.asPrivate)
        #expect(asKey.publicKey.x963Representation == RFC8291.asPublic)
        let secret = try asKey.sharedSecret(with: P256PublicKey(x963Representation: RFC8291.uaPublic))
        #expect(secret == RFC8291.ecdh)
        #expect(WebPushEncryptor.keyInfo(uaPublic: RFC8291.uaPublic, asPublic: RFC8291.asPublic) == RFC8291.keyInfo)
        let keys = try WebPushEncryptor.deriveKeys(
            ecdhSecret: secret, authSecret: RFC8291.auth, uaPublic: RFC8291.uaPublic, asPublic: RFC8291.asPublic,
            salt: RFC8291.salt)
        #expect(keys.prkKey == RFC8291.prkKey)
        #expect(keys.ikm == RFC8291.ikm)
        #expect(keys.prk == RFC8291.prk)
        #expect(keys.cek == RFC8291.cek)
        #expect(keys.nonce == RFC8291.nonce)
    }

    @Test func swappedKeyOrderDiffers() throws {
        let keys = try WebPushEncryptor.deriveKeys(
            ecdhSecret: RFC8291.ecdh, authSecret: RFC8291.auth, uaPublic: RFC8291.asPublic, asPublic: RFC8291.uaPublic,
            salt: RFC8291.salt)
        #expect(keys.ikm != RFC8291.ikm)
    }

    @Test func rfc8291BodyByteForByte() throws {
        let body = try WebPushEncryptor.encrypt(
            RFC8291.plaintext, to: RFC8291.subscriber(),
            ephemeralKey: P256PrivateKey(rawRepresentation: RFC8291.asPrivate), salt: RFC8291.salt)
        #expect(body.count == 144)
        #expect(body == RFC8291.body)
        #expect(Base64.urlEncode(body) == RFC8291.bodyB64)
    }

    @Test func rfc8291VectorFile() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/webpush/rfc8291-appendix-a.json")
        let v = try JSONValue.parse(Array(try Data(contentsOf: url)))
        func field(_ k: String) -> [UInt8] { b64u(v[k]?.stringValue ?? "") }
        let subscriber = try WebPushSubscriberKey(
            publicKey: P256PublicKey(x963Representation: field("uaPublic")), authSecret: field("auth"))
        let body = try WebPushEncryptor.encrypt(
            field("plaintext"), to: subscriber, ephemeralKey: P256PrivateKey(rawRepresentation: field("asPrivate")),
            salt: field("salt"))
        #expect(body == field("body"))
    }

    @Test func rfc8291Decrypts() throws {
        let ua = try P256PrivateKey(rawRepresentation: RFC8291.uaPrivate)
        let plain = try ECEDecryptor.decryptWebPush(RFC8291.body, subscriberPrivateKey: ua, authSecret: RFC8291.auth)
        #expect(plain == RFC8291.plaintext)
    }

    @Test func rfc8188OneRecord() throws {
        let body = b64u("I1BsxtFttlv3u_Oo94xnmwAAEAAA-NAVub2qFgBEuQKRapoZu-IxkIva3MEB1PD-ly8Thjg")
        let header = try ECEDecryptor.parseHeader(body)
        #expect(header.recordSize == 4096)
        #expect(header.keyId.isEmpty)
        let keys = try WebPushEncryptor.contentKeys(ikm: b64u("yqdlZ-tYemfogSmv7Ws5PQ"), salt: header.salt)
        #expect(keys.prk == b64u("zyeH5phsIsgUyd4oiSEIy35x-gIi4aM7y0hCF8mwn9g"))
        #expect(keys.cek == b64u("_wniytB-ofscZDh4tbSjHw"))
        #expect(keys.nonce == b64u("Bcs8gkIRKLI8GeI8"))
        let plain = try ECEDecryptor.decrypt(body, ikm: b64u("yqdlZ-tYemfogSmv7Ws5PQ"))
        #expect(String(decoding: plain, as: UTF8.self) == "I am the walrus")
    }

    @Test func rfc8188TwoRecords() throws {
        let body = b64u(
            "uNCkWiNYzKTnBN9ji3-qWAAAABkCYTHOG8chz_gnvgOqdGYovxyjuqRyJFjEDyoF1Fvkj6hQPdPHI51OEUKEpgz3SsLWIqS_uA")
        let header = try ECEDecryptor.parseHeader(body)
        #expect(header.recordSize == 25)
        #expect(header.keyId == Array("a1".utf8))
        let plain = try ECEDecryptor.decrypt(body, ikm: b64u("BO3ZVPxUlnLORbVGMpbT1Q"))
        #expect(String(decoding: plain, as: UTF8.self) == "I am the walrus")
    }

    @Test func tamperingFails() throws {
        let ua = try P256PrivateKey(rawRepresentation: RFC8291.uaPrivate)
        for index in [0, 30, 100, 143] {  // salt, keyid, ciphertext, tag
            var body = RFC8291.body
            body[index] ^= 0x01
            #expect(throws: WebPushError.self) {
                _ = try ECEDecryptor.decryptWebPush(body, subscriberPrivateKey: ua, authSecret: RFC8291.auth)
            }
        }
    }

    @Test func headerRules() throws {
        #expect(throws: WebPushError.self) { _ = try ECEDecryptor.parseHeader([UInt8](repeating: 0, count: 20)) }
        var small = [UInt8](repeating: 0, count: 16) + [0, 0, 0, 17, 0] + [UInt8](repeating: 0, count: 20)
        #expect(throws: WebPushError.self) { _ = try ECEDecryptor.parseHeader(small) }
        small[19] = 18
        #expect(try ECEDecryptor.parseHeader(small).recordSize == 18)
        // Web Push needs a 65-byte key id starting 0x04.
        let ua = try P256PrivateKey(rawRepresentation: RFC8291.uaPrivate)
        #expect(throws: WebPushError.self) {
            _ = try ECEDecryptor.decryptWebPush(small, subscriberPrivateKey: ua, authSecret: RFC8291.auth)
        }
    }

    /// Builds a one-record body from raw record plaintext to exercise the delimiter rules.
    func body(record: [UInt8], ikm: [UInt8], salt: [UInt8]) throws -> [UInt8] {
        let keys = try WebPushEncryptor.contentKeys(ikm: ikm, salt: salt)
        return salt + [0, 0, 0x10, 0, 0] + (try AESGCM.seal(record, key: keys.cek, nonce: keys.nonce))
    }

    @Test func delimiterRules() throws {
        let ikm = [UInt8](repeating: 7, count: 16)
        let salt = [UInt8](repeating: 9, count: 16)
        #expect(try ECEDecryptor.decrypt(try body(record: [65, 2, 0, 0], ikm: ikm, salt: salt), ikm: ikm) == [65])
        for bad: [UInt8] in [[65, 1], [0, 0, 0], [65, 2, 0, 3]] {
            let b = try body(record: bad, ikm: ikm, salt: salt)
            #expect(throws: WebPushError.self) { _ = try ECEDecryptor.decrypt(b, ikm: ikm) }
        }
    }

    @Test func sizeLimits() throws {
        let sub = try RFC8291.subscriber()
        let key = try P256PrivateKey()
        let fits = try WebPushEncryptor.encrypt(
            [UInt8](repeating: 0x61, count: 3993), to: sub, ephemeralKey: key, salt: RFC8291.salt)
        #expect(fits.count == 4096)
        #expect(throws: WebPushError.self) {
            _ = try WebPushEncryptor.encrypt(
                [UInt8](repeating: 0x61, count: 3994), to: sub, ephemeralKey: key, salt: RFC8291.salt)
        }
    }

    @Test func paddedBodiesDecrypt() throws {
        let ua = try P256PrivateKey(rawRepresentation: RFC8291.uaPrivate)
        let body = try WebPushEncryptor.encrypt(
            RFC8291.plaintext, to: RFC8291.subscriber(), ephemeralKey: P256PrivateKey(), salt: RFC8291.salt,
            paddedLength: 3000)
        #expect(body.count == 86 + 3000 + 16)
        #expect(
            try ECEDecryptor.decryptWebPush(body, subscriberPrivateKey: ua, authSecret: RFC8291.auth)
                == RFC8291.plaintext)
    }

    @Test func freshKeysGiveDifferentBodies() throws {
        let ua = try P256PrivateKey(rawRepresentation: RFC8291.uaPrivate)
        let a = try WebPushEncryptor.encrypt(
            RFC8291.plaintext, to: RFC8291.subscriber(), ephemeralKey: P256PrivateKey(), salt: SecureRandom.bytes(16))
        let b = try WebPushEncryptor.encrypt(
            RFC8291.plaintext, to: RFC8291.subscriber(), ephemeralKey: P256PrivateKey(), salt: SecureRandom.bytes(16))
        #expect(a != b)
        for x in [a, b] {
            #expect(
                try ECEDecryptor.decryptWebPush(x, subscriberPrivateKey: ua, authSecret: RFC8291.auth)
                    == RFC8291.plaintext)
        }
    }

    @Test func subscriberKeyRules() throws {
        let p256dh = Base64.urlEncode(RFC8291.uaPublic)
        let auth = Base64.urlEncode(RFC8291.auth)
        _ = try WebPushSubscriberKey(p256dh: p256dh, auth: auth)
        _ = try WebPushSubscriberKey(p256dh: Base64.encode(RFC8291.uaPublic), auth: Base64.encode(RFC8291.auth))
        var offCurve = RFC8291.uaPublic
        offCurve[64] ^= 0x01
        let bad = [
            (Base64.urlEncode(Array(RFC8291.uaPublic.prefix(64))), auth),
            (Base64.urlEncode(RFC8291.uaPublic + [0]), auth),
            (Base64.urlEncode(offCurve), auth),
            (p256dh, Base64.urlEncode(Array(RFC8291.auth.prefix(15)))),
            (p256dh, Base64.urlEncode(RFC8291.auth + [1])),
        ]
        for (p, a) in bad {
            #expect(throws: WebPushError.self) { _ = try WebPushSubscriberKey(p256dh: p, auth: a) }
        }
    }
}
