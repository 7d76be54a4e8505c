import Foundation
import HeraldCrypto
import Testing

@Suite("RS256")
struct RSAPrivateKeyTests {
    @Test("a key from openssl genpkey signs RS256; openssl dgst -verify accepts it")
    func signAndVerifyWithOpenSSL() throws {
        let dir = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keyPath = dir.appendingPathComponent("rsa.pem").path
        let pubPath = dir.appendingPathComponent("rsa.pub").path
        let msgPath = dir.appendingPathComponent("msg").path
        let sigPath = dir.appendingPathComponent("sig").path
        let gen = try run(
            "openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyPath])
        #expect(gen.status == 0, "\(gen.stderr)")
        #expect(try run("openssl", ["pkey", "-in", keyPath, "-pubout", "-out", pubPath]).status == 0)
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try RSAPrivateKey(pemRepresentation: pem)
        let message: [UInt8] = Array("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJoZXJhbGQifQ".utf8)
        let signature = try key.signatureRS256(for: message)
        #expect(signature.count == 256)
        // RSASSA-PKCS1-v15 is deterministic.
        #expect(try key.signatureRS256(for: message) == signature)
        try Data(message).write(to: URL(fileURLWithPath: msgPath))
        try Data(signature).write(to: URL(fileURLWithPath: sigPath))
        let verify = try run("openssl", ["dgst", "-sha256", "-verify", pubPath, "-signature", sigPath, msgPath])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        // A JWS built with the key carries the same signature.
        let token = try JWS.compact(
            headerJSON: Array(#"{"alg":"RS256"}"#.utf8), payloadJSON: Array(#"{"iss":"herald"}"#.utf8),
            algorithm: .rs256(key))
        #expect(token.hasSuffix("." + Base64.urlEncode(signature)))
        // A tampered message fails openssl verification.
        try Data(message + [0x20]).write(to: URL(fileURLWithPath: msgPath))
        #expect(
            try run("openssl", ["dgst", "-sha256", "-verify", pubPath, "-signature", sigPath, msgPath]).status != 0)
    }

    @Test("an EC key or a short RSA key is refused as RSA")
    func wrongKeyType() throws {
        let ec = try P256PrivateKey().pemRepresentation
        do {
            _ = try RSAPrivateKey(pemRepresentation: ec)
            Issue.record("EC key accepted as RSA")
        } catch {
            #expect(error.code == .invalidKey)
        }
        #expect(throws: CryptoError.self) { try P256PrivateKey(pemRepresentation: "") }
    }
}
