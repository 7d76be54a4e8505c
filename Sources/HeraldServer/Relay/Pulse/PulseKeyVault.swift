import ChannelAPI
import Foundation
import HeraldCrypto

/// Seals the sites' pushKeys for the store (AES-256-GCM under the relay's `key-file`), so a copy of
/// the database alone does not let anyone sign pushes. Each sealed key is bound to its (deviceId,
/// sourceId) by the additional data, so it cannot be moved to another record. Form:
/// `v1.<base64url(nonce ‖ ciphertext ‖ tag)>`.
struct PulseKeyVault: Sendable {
    let key: [UInt8]

    /// Why the key file cannot be used.
    struct Unusable: Error {
        let reason: String
    }

    /// The vault over the 32 bytes in `path`: base64 (either alphabet) of 32 bytes, or 32 raw bytes.
    static func load(_ path: String) -> Result<PulseKeyVault, Unusable> {
        let expanded = NSString(string: path).expandingTildeInPath
        guard let data = FileManager.default.contents(atPath: expanded) else {
            return .failure(
                Unusable(
                    reason: "cannot read \(path); create it with: openssl rand -base64 32 > \(path); chmod 600 \(path)")
            )
        }
        let bytes = [UInt8](data)
        if bytes.count == 32 { return .success(PulseKeyVault(key: bytes)) }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let decoded = try? Base64.decodeEitherAlphabet(text), decoded.count == 32 else {
            return .failure(
                Unusable(reason: "\(path) must hold 32 bytes, or base64 of 32 bytes (openssl rand -base64 32)"))
        }
        return .success(PulseKeyVault(key: decoded))
    }

    static func aad(deviceId: String, sourceId: String) -> [UInt8] {
        Array("pulse-relay-key-v1\n\(deviceId)\n\(sourceId)".utf8)
    }

    /// Seals a pushKey for (deviceId, sourceId); nil only if OpenSSL fails.
    func seal(_ pushKey: [UInt8], deviceId: String, sourceId: String) -> String? {
        let nonce = SecureRandom.bytes(AESGCM.nonceLength)
        guard
            let sealed = try? AESGCM.seal(
                pushKey, key: key, nonce: nonce, authenticating: Self.aad(deviceId: deviceId, sourceId: sourceId))
        else { return nil }
        return "v1." + Base64.urlEncode(nonce + sealed)
    }

    /// Opens a sealed pushKey; nil when it was sealed under another key or for another record.
    func open(_ sealed: String, deviceId: String, sourceId: String) -> [UInt8]? {
        guard sealed.hasPrefix("v1."), let raw = try? Base64.urlDecode(String(sealed.dropFirst(3))),
            raw.count > AESGCM.nonceLength + AESGCM.tagLength
        else { return nil }
        return try? AESGCM.open(
            Array(raw[AESGCM.nonceLength...]), key: key, nonce: Array(raw[..<AESGCM.nonceLength]),
            authenticating: Self.aad(deviceId: deviceId, sourceId: sourceId))
    }
}
