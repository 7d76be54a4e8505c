import Foundation

/// JWS Compact Serialization (RFC 7515 §7.1).
public enum JWS {
    private struct ProtectedHeader: Decodable {
        var alg: String
        var crit: [String]?
    }

    /// Builds `base64url(header).base64url(payload).base64url(signature)` from already-serialised JSON bytes.
    ///
    /// The bytes are used as given (no re-serialisation), so the caller controls member order.
    /// - Throws: ``CryptoError`` if signing fails, or ``CryptoError/Code/invalidKey`` for an empty HS256 secret.
    public static func compact(
        headerJSON: [UInt8], payloadJSON: [UInt8], algorithm: JWSAlgorithm
    ) throws(CryptoError) -> String {
        let signingInput = Base64.urlEncode(headerJSON) + "." + Base64.urlEncode(payloadJSON)
        let input = Array(signingInput.utf8)
        let signature: [UInt8]
        switch algorithm {
        case .es256(let key):
            signature = try key.signature(for: input).rawRepresentation
        case .rs256(let key):
            signature = try key.signatureRS256(for: input)
        case .hs256(let secret):
            guard !secret.isEmpty else { throw OpenSSL.invalid(.invalidKey, "HS256 secret must not be empty") }
            signature = try HMACSHA256.compute(key: secret, message: input)
        }
        return signingInput + "." + Base64.urlEncode(signature)
    }

    /// Verifies an ES256 compact JWS, returning the decoded payload bytes.
    ///
    /// The protected header must decode to JSON with `"alg":"ES256"` and no `crit` member; the signature must be
    /// 64 bytes `r || s`.
    /// - Throws: ``CryptoError/Code/invalidInput`` or ``CryptoError/Code/invalidBase64`` for a malformed token,
    ///   ``CryptoError/Code/authenticationFailed`` if the signature does not verify.
    public static func verifyES256(_ token: String, publicKey: P256PublicKey) throws(CryptoError) -> [UInt8] {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw OpenSSL.invalid(.invalidInput, "compact JWS must have three dot-separated parts")
        }
        let headerBytes = try Base64.urlDecode(String(decoding: parts[0], as: UTF8.self))
        let payload = try Base64.urlDecode(String(decoding: parts[1], as: UTF8.self))
        let signatureBytes = try Base64.urlDecode(String(decoding: parts[2], as: UTF8.self))
        let header: ProtectedHeader
        do {
            header = try JSONDecoder().decode(ProtectedHeader.self, from: Data(headerBytes))
        } catch {
            throw OpenSSL.invalid(.invalidInput, "JWS protected header is not valid JSON with an alg member")
        }
        guard header.alg == "ES256" else {
            throw OpenSSL.invalid(.invalidInput, "JWS alg is \(header.alg), expected ES256")
        }
        guard header.crit == nil else {
            throw OpenSSL.invalid(.invalidInput, "JWS crit header parameters are not supported")
        }
        let signature = try ECDSASignature(rawRepresentation: signatureBytes)
        let signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        guard publicKey.isValidSignature(signature, for: signingInput) else {
            throw OpenSSL.invalid(.authenticationFailed, "ES256 signature does not verify")
        }
        return payload
    }
}
