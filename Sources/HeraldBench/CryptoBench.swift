import Foundation
import HeraldCrypto

/// Single-threaded throughput of the Web Push (RFC 8291) crypto pipeline built from HeraldCrypto primitives.
enum CryptoBench {
    /// Runs the pipeline for about `seconds` and returns a markdown snippet with messages/s.
    ///
    /// Per message: P-256 key generation, ECDH with a pre-validated subscriber key, random 16-byte salt,
    /// HKDF (extract + expand for IKM, then extract for PRK and expands for CEK and NONCE), and AES-128-GCM of a
    /// 3 KB payload (plus the 0x02 padding delimiter).
    static func run(seconds: Double) throws -> String {
        let subscriber = try P256PrivateKey()
        let uaPublic = try P256PublicKey(x963Representation: subscriber.publicKey.x963Representation)
        let uaPublicBytes = uaPublic.x963Representation
        let authSecret = SecureRandom.bytes(16)
        let record = [UInt8](repeating: 0x41, count: 3 * 1024) + [0x02]
        let infoPrefix = Array("WebPush: info".utf8) + [0] + uaPublicBytes
        let cekInfo = Array("Content-Encoding: aes128gcm".utf8) + [0]
        let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0]

        func message() throws -> Int {
            let ephemeral = try P256PrivateKey()
            let asPublic = ephemeral.publicKey.x963Representation
            let ecdhSecret = try ephemeral.sharedSecret(with: uaPublic)
            let salt = SecureRandom.bytes(16)
            let prkKey = HKDF.extract(salt: authSecret, inputKeyMaterial: ecdhSecret)
            let ikm = try HKDF.expand(pseudoRandomKey: prkKey, info: infoPrefix + asPublic, length: 32)
            let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
            let cek = try HKDF.expand(pseudoRandomKey: prk, info: cekInfo, length: 16)
            let nonce = try HKDF.expand(pseudoRandomKey: prk, info: nonceInfo, length: 12)
            return try AESGCM.seal(record, key: cek, nonce: nonce).count
        }

        // Warm up (algorithm fetches, caches).
        for _ in 0..<200 { _ = try message() }
        let clock = ContinuousClock()
        let budget = Duration.milliseconds(Int64(max(seconds, 0.1) * 1000))
        let start = clock.now
        var count = 0
        var bytes = 0
        while clock.now - start < budget {
            for _ in 0..<100 { bytes += try message() }
            count += 100
        }
        let elapsed = clock.now - start
        let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(count) / elapsedSeconds
        let perMessage = elapsedSeconds / Double(count) * 1e6
        return """
            ### HeraldCrypto: Web Push pipeline (single thread)

            | pipeline per message | messages | seconds | messages/s | µs/message |
            |---|---:|---:|---:|---:|
            | P-256 keygen + ECDH + HKDF (RFC 8291) + AES-128-GCM 3 KB | \(count) | \
            \(String(format: "%.2f", elapsedSeconds)) | \(String(format: "%.0f", rate)) | \
            \(String(format: "%.1f", perMessage)) |

            (\(bytes / max(count, 1)) bytes of ciphertext per message)
            """
    }
}
