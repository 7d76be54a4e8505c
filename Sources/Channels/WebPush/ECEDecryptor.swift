import HeraldCrypto

/// Decryption of the RFC 8188 `aes128gcm` content coding (any number of records) and of RFC 8291
/// Web Push messages on top of it.
///
/// Herald only sends, but the decryptor lets tests and tools check real output: a hub can use it to
/// verify what its service worker will see.
public enum ECEDecryptor {
    /// The header at the start of an `aes128gcm` body.
    public struct Header: Sendable, Equatable {
        /// The 16-byte salt.
        public var salt: [UInt8]
        /// The record size (ciphertext bytes per record, tag included).
        public var recordSize: Int
        /// The key id (for Web Push the sender's 65-byte public key).
        public var keyId: [UInt8]
        /// The header's length in bytes: 21 + idlen.
        public var length: Int { 21 + keyId.count }
    }

    /// Parses the header. Refuses bodies shorter than 21 bytes and record sizes below 18.
    public static func parseHeader(_ body: [UInt8]) throws(WebPushError) -> Header {
        guard body.count >= 21 else { throw WebPushError("body of \(body.count) bytes is shorter than the header") }
        let rs = Int(body[16]) << 24 | Int(body[17]) << 16 | Int(body[18]) << 8 | Int(body[19])
        guard rs >= 18 else { throw WebPushError("record size \(rs) is below 18") }
        let idlen = Int(body[20])
        guard body.count >= 21 + idlen else { throw WebPushError("body ends inside the key id") }
        return Header(salt: Array(body[0..<16]), recordSize: rs, keyId: Array(body[21..<(21 + idlen)]))
    }

    /// Decrypts an `aes128gcm` body with the input keying material `ikm` (RFC 8188 §2).
    public static func decrypt(_ body: [UInt8], ikm: [UInt8]) throws(WebPushError) -> [UInt8] {
        let header = try parseHeader(body)
        let keys: (prk: [UInt8], cek: [UInt8], nonce: [UInt8])
        do { keys = try WebPushEncryptor.contentKeys(ikm: ikm, salt: header.salt) } catch {
            throw WebPushError("key derivation failed: \(error.message)")
        }
        var offset = header.length
        guard offset < body.count else { throw WebPushError("body has no records") }
        var out: [UInt8] = []
        var seq: UInt64 = 0
        while offset < body.count {
            let end = min(offset + header.recordSize, body.count)
            let isLast = end == body.count
            let record = Array(body[offset..<end])
            guard record.count > AESGCM.tagLength else { throw WebPushError("record \(seq) is too short") }
            var nonce = keys.nonce
            for i in 0..<8 { nonce[11 - i] ^= UInt8(truncatingIfNeeded: seq >> (8 * UInt64(i))) }
            let plain: [UInt8]
            do { plain = try AESGCM.open(record, key: keys.cek, nonce: nonce) } catch {
                throw WebPushError("record \(seq) does not decrypt: \(error.message)")
            }
            guard let delimiterIndex = plain.lastIndex(where: { $0 != 0 }) else {
                throw WebPushError("record \(seq) has no padding delimiter")
            }
            let delimiter = plain[delimiterIndex]
            guard delimiter == (isLast ? 2 : 1) else {
                throw WebPushError("record \(seq) has delimiter \(delimiter), expected \(isLast ? 2 : 1)")
            }
            out += plain[..<delimiterIndex]
            offset = end
            seq += 1
        }
        return out
    }

    /// Decrypts an RFC 8291 Web Push message with the subscriber's private key and auth secret.
    public static func decryptWebPush(
        _ body: [UInt8], subscriberPrivateKey: P256PrivateKey, authSecret: [UInt8]
    ) throws(WebPushError) -> [UInt8] {
        let header = try parseHeader(body)
        guard header.keyId.count == 65, header.keyId.first == 0x04 else {
            throw WebPushError("key id must be the sender's 65-byte uncompressed public key")
        }
        let ikm: [UInt8]
        do {
            let sender = try P256PublicKey(x963Representation: header.keyId)
            let secret = try subscriberPrivateKey.sharedSecret(with: sender)
            let prkKey = HKDF.extract(salt: authSecret, inputKeyMaterial: secret)
            let info = WebPushEncryptor.keyInfo(
                uaPublic: subscriberPrivateKey.publicKey.x963Representation, asPublic: header.keyId)
            ikm = try HKDF.expand(pseudoRandomKey: prkKey, info: info, length: 32)
        } catch {
            throw WebPushError("key agreement failed: \(error.message)")
        }
        return try decrypt(body, ikm: ikm)
    }
}
