import Foundation
import HeraldCrypto

/// Single-threaded throughput of the Web Push (RFC 8291) crypto pipeline built from HeraldCrypto primitives.
enum CryptoBench {
    /// Runs the pipeline for about `seconds` and returns a markdown snippet with messages/s.
    ///
    /// Per message: P-256 key generation, ECDH with a pre-validated subscriber key, random 16-byte salt,
    /// HKDF (extract + expand for IKM, then extract for PRK and expands for CEK and NONCE), and AES-128-GCM of a
    /// 3 KB payload (plus the 0x02 padding delimiter).
    static func run(seconds: Double, stages: Bool = false) throws -> String {
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
        // Both clocks are read: the rate is computed from the process CPU time (user + system), like
        // `openssl speed` (which divides by CPU user time), so that other load on a shared machine does not count
        // against the pipeline; the wall-clock figure is printed beside it.
        let clock = ContinuousClock()
        let budget = Duration.milliseconds(Int64(max(seconds, 0.1) * 1000))
        let start = clock.now
        let cpuStart = cpuSeconds()
        var count = 0
        var bytes = 0
        while clock.now - start < budget {
            for _ in 0..<100 { bytes += try message() }
            count += 100
        }
        let elapsed = clock.now - start
        let cpuElapsed = cpuSeconds() - cpuStart
        let wallSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(count) / cpuElapsed
        let perMessage = cpuElapsed / Double(count) * 1e6
        var stagesText = ""
        if stages {
            // Each stage alone, CPU time per call, to see where the time goes.
            let ephemeral = try P256PrivateKey()
            let ecdhSecret = try ephemeral.sharedSecret(with: uaPublic)
            let salt = SecureRandom.bytes(16)
            let asPublic = ephemeral.publicKey.x963Representation
            func stage(_ name: String, _ body: () throws -> Void) rethrows -> String {
                for _ in 0..<200 { try body() }
                let n = 5000
                let t0 = cpuSeconds()
                for _ in 0..<n { try body() }
                return "| \(name) | \(String(format: "%.2f", (cpuSeconds() - t0) / Double(n) * 1e6)) |\n"
            }
            stagesText += "\n| stage | CPU µs/call |\n|---|---:|\n"
            stagesText += try stage("P256PrivateKey() (keygen + public point)") { _ = try P256PrivateKey() }
            stagesText += try stage("sharedSecret (ECDH)") { _ = try ephemeral.sharedSecret(with: uaPublic) }
            stagesText += try stage("HKDF (2 extract + 3 expand)") {
                let prkKey = HKDF.extract(salt: authSecret, inputKeyMaterial: ecdhSecret)
                let ikm = try HKDF.expand(pseudoRandomKey: prkKey, info: infoPrefix + asPublic, length: 32)
                let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
                _ = try HKDF.expand(pseudoRandomKey: prk, info: cekInfo, length: 16)
                _ = try HKDF.expand(pseudoRandomKey: prk, info: nonceInfo, length: 12)
            }
            stagesText += stage("HMACSHA256 (32-byte message)") {
                _ = HMACSHA256.authenticationCode(key: authSecret, message: ecdhSecret)
            }
            stagesText += try stage("AESGCM.seal 3 KB") {
                _ = try AESGCM.seal(record, key: Array(ecdhSecret[0..<16]), nonce: Array(salt[0..<12]))
            }
            stagesText += stage("SecureRandom.bytes(16)") { _ = SecureRandom.bytes(16) }
        }
        return """
            ### HeraldCrypto: Web Push pipeline (single thread)

            | pipeline per message | messages | CPU seconds | messages/s (CPU) | µs/message (CPU) | wall seconds |
            |---|---:|---:|---:|---:|---:|
            | P-256 keygen + ECDH + HKDF (RFC 8291) + AES-128-GCM 3 KB | \(count) | \
            \(String(format: "%.2f", cpuElapsed)) | \(String(format: "%.0f", rate)) | \
            \(String(format: "%.1f", perMessage)) | \(String(format: "%.2f", wallSeconds)) |

            (\(bytes / max(count, 1)) bytes of ciphertext per message; \
            wall-clock rate \(String(format: "%.0f", Double(count) / wallSeconds)) messages/s)
            \(stagesText)
            """
    }

    /// CPU time (user + system) consumed by this process so far, in seconds.
    static func cpuSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
