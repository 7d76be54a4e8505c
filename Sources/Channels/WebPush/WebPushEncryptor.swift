import HeraldCrypto

/// The subscriber's half of RFC 8291: the browser's P-256 public key (`keys.p256dh`) and the
/// 16-byte authentication secret (`keys.auth`), validated once when created.
public struct WebPushSubscriberKey: Sendable {
    /// The user agent's public key (ua_public), already checked to be on the curve.
    public let publicKey: P256PublicKey
    /// The 16-byte authentication secret.
    public let authSecret: [UInt8]

    /// Wraps validated key material. Throws when the auth secret is not 16 bytes.
    public init(publicKey: P256PublicKey, authSecret: [UInt8]) throws(WebPushError) {
        guard authSecret.count == 16 else {
            throw WebPushError("auth secret must be 16 bytes, got \(authSecret.count)")
        }
        self.publicKey = publicKey
        self.authSecret = authSecret
    }

    /// Decodes `p256dh` and `auth` as the browser gives them (base64url; standard base64 accepted too).
    public init(p256dh: String, auth: String) throws(WebPushError) {
        let point: [UInt8]
        do { point = try Base64.decodeEitherAlphabet(p256dh) } catch { throw WebPushError("p256dh is not base64") }
        guard point.count == 65, point.first == 0x04 else {
            throw WebPushError("p256dh must be a 65-byte uncompressed P-256 point, got \(point.count) bytes")
        }
        let key: P256PublicKey
        do { key = try P256PublicKey(x963Representation: point) } catch {
            throw WebPushError("p256dh is not a point on the P-256 curve")
        }
        let secret: [UInt8]
        do { secret = try Base64.decodeEitherAlphabet(auth) } catch { throw WebPushError("auth is not base64") }
        try self.init(publicKey: key, authSecret: secret)
    }
}

/// RFC 8291 message encryption with the RFC 8188 `aes128gcm` content coding: one record, the
/// sender's ephemeral public key as key id, record size 4096.
///
/// Pure: the ephemeral key pair and salt are parameters, so the RFC 8291 Appendix A vector can be
/// reproduced byte for byte. Production callers pass a fresh `P256PrivateKey()` and 16 fresh
/// random bytes for every message.
public enum WebPushEncryptor {
    /// Bytes before the ciphertext: salt (16) + rs (4) + idlen (1) + keyid (65).
    public static let headerLength = 86
    /// The largest body a push service must accept (RFC 8030 §7.2).
    public static let maxBodyLength = 4096
    /// The record size written into the header.
    public static let recordSize: UInt32 = 4096
    /// The largest record plaintext (data + delimiter + padding) that keeps the body within
    /// ``maxBodyLength``: 4096 − 86 − 16 = 3994.
    public static let maxRecordPlaintext = maxBodyLength - headerLength - AESGCM.tagLength
    /// The largest payload that fits (one byte goes to the delimiter): 3993.
    public static let maxPlaintext = maxRecordPlaintext - 1

    /// The keys RFC 8291 §3.4 and RFC 8188 §2.2 derive for one message.
    public struct DerivedKeys: Sendable, Equatable {
        /// HKDF-Extract(auth_secret, ecdh_secret).
        public var prkKey: [UInt8]
        /// The 32-byte input keying material for the content coding.
        public var ikm: [UInt8]
        /// HKDF-Extract(salt, IKM).
        public var prk: [UInt8]
        /// The 16-byte content-encryption key.
        public var cek: [UInt8]
        /// The 12-byte nonce (record 0).
        public var nonce: [UInt8]
    }

    /// `"WebPush: info" || 0x00 || ua_public || as_public` (144 bytes).
    public static func keyInfo(uaPublic: [UInt8], asPublic: [UInt8]) -> [UInt8] {
        Array("WebPush: info".utf8) + [0] + uaPublic + asPublic
    }

    /// Derives the message keys from the ECDH secret (RFC 8291 §3.3–3.4, RFC 8188 §2.2).
    public static func deriveKeys(
        ecdhSecret: [UInt8], authSecret: [UInt8], uaPublic: [UInt8], asPublic: [UInt8], salt: [UInt8]
    ) throws(CryptoError) -> DerivedKeys {
        let prkKey = HKDF.extract(salt: authSecret, inputKeyMaterial: ecdhSecret)
        let ikm = try HKDF.expand(
            pseudoRandomKey: prkKey, info: keyInfo(uaPublic: uaPublic, asPublic: asPublic), length: 32)
        let keys = try contentKeys(ikm: ikm, salt: salt)
        return DerivedKeys(prkKey: prkKey, ikm: ikm, prk: keys.prk, cek: keys.cek, nonce: keys.nonce)
    }

    /// RFC 8188 §2.2: PRK, CEK and NONCE from the input keying material and salt.
    public static func contentKeys(ikm: [UInt8], salt: [UInt8]) throws(CryptoError) -> (
        prk: [UInt8], cek: [UInt8], nonce: [UInt8]
    ) {
        let prk = HKDF.extract(salt: salt, inputKeyMaterial: ikm)
        let cek = try HKDF.expand(
            pseudoRandomKey: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = try HKDF.expand(
            pseudoRandomKey: prk, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        return (prk, cek, nonce)
    }

    /// Encrypts `plaintext` for `subscriber` into a complete `aes128gcm` body.
    ///
    /// - Parameters:
    ///   - plaintext: The payload (at most ``maxPlaintext`` bytes).
    ///   - subscriber: The subscription's keys.
    ///   - ephemeralKey: The sender's one-time key pair (never the VAPID key).
    ///   - salt: 16 random bytes, never reused.
    ///   - paddedLength: The record plaintext length (data + delimiter + zeros), at least
    ///     `plaintext.count + 1` and at most ``maxRecordPlaintext``; nil means no padding.
    /// - Returns: header ‖ ciphertext ‖ tag; `86 + paddedLength + 16` bytes.
    public static func encrypt(
        _ plaintext: [UInt8], to subscriber: WebPushSubscriberKey, ephemeralKey: P256PrivateKey, salt: [UInt8],
        paddedLength: Int? = nil
    ) throws(WebPushError) -> [UInt8] {
        guard salt.count == 16 else { throw WebPushError("salt must be 16 bytes") }
        let recordLength = paddedLength ?? plaintext.count + 1
        guard plaintext.count + 1 <= recordLength else {
            throw WebPushError("padded length \(recordLength) is shorter than the payload plus delimiter")
        }
        guard recordLength <= maxRecordPlaintext else {
            throw WebPushError(
                "payload of \(plaintext.count) bytes makes a body of \(headerLength + recordLength + AESGCM.tagLength) "
                    + "bytes; Web Push allows at most \(maxBodyLength)")
        }
        let asPublic = ephemeralKey.publicKey.x963Representation
        let uaPublic = subscriber.publicKey.x963Representation
        do {
            let secret = try ephemeralKey.sharedSecret(with: subscriber.publicKey)
            let keys = try deriveKeys(
                ecdhSecret: secret, authSecret: subscriber.authSecret, uaPublic: uaPublic, asPublic: asPublic,
                salt: salt)
            var record = plaintext
            record.reserveCapacity(recordLength)
            record.append(0x02)
            if recordLength > record.count { record += [UInt8](repeating: 0, count: recordLength - record.count) }
            let sealed = try AESGCM.seal(record, key: keys.cek, nonce: keys.nonce)
            var body = salt
            body.reserveCapacity(headerLength + sealed.count)
            body += [
                UInt8(recordSize >> 24), UInt8(recordSize >> 16 & 0xFF), UInt8(recordSize >> 8 & 0xFF),
                UInt8(recordSize & 0xFF),
            ]
            body.append(UInt8(asPublic.count))
            body += asPublic
            body += sealed
            return body
        } catch {
            throw WebPushError("encryption failed: \(error.message)")
        }
    }
}
