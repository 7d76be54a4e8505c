import ChannelAPI
import HeraldCrypto

/// Pulse Relay request signing (pure): `X-Pulse-Auth: v2 <unix seconds> <request uuid> <sig>` with
/// `sig = base64url(HMAC-SHA256(base64url-decode(pushKey),
/// "POST\n" + path + "\n" + seconds + "\n" + requestId + "\n" + hex(SHA-256(body))))`.
enum PulseAuth {
    /// The signed string.
    static func canonical(path: String, seconds: Int64, requestId: String, body: [UInt8]) -> String {
        "POST\n\(path)\n\(seconds)\n\(requestId)\n\(Hex.encode(SHA256.hash(body)))"
    }

    /// The `X-Pulse-Auth` value over the exact body bytes.
    static func header(key: [UInt8], path: String, seconds: Int64, requestId: String, body: [UInt8]) -> String {
        let mac = HMACSHA256.authenticationCode(
            key: key, message: Array(canonical(path: path, seconds: seconds, requestId: requestId, body: body).utf8))
        return "v2 \(seconds) \(requestId) \(Base64.urlEncode(mac))"
    }
}
