import ChannelAPI
import HeraldCrypto

/// Why the Pulse relay refuses a request: the status of the guide's table (section 三), a code and a
/// reason; nothing is sent to APNs.
struct PulseRefusal: Error, Equatable {
    var status: Int
    var code: String
    var reason: String
    /// Seconds for `Retry-After` (429, and 5xx when known).
    var retryAfter: Int?

    init(_ status: Int, _ code: String, _ reason: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
    }

    static func bad(_ reason: String, code: String = "invalid_request") -> PulseRefusal {
        PulseRefusal(400, code, reason)
    }

    /// The answer: `{ok:false, code, error}`, with `Retry-After` when set.
    var response: RelayResponse {
        RelayResponse(
            status, RelayUpstream.body(code, reason),
            headers: retryAfter.map { ["Retry-After": String(max(1, $0))] } ?? [:])
    }
}

/// The signature part of a site's push (pure): `X-Pulse-Source` and
/// `X-Pulse-Auth: v2 <unix seconds> <requestId> <signature>`, where signature =
/// `base64url(HMAC-SHA256(pushKey, "POST\n" + path + "\n" + seconds + "\n" + requestId + "\n" + sha256hex(body)))`.
struct PulseSiteRequest: Equatable {
    /// `X-Pulse-Source`.
    var sourceId: String
    /// The signed unix seconds.
    var seconds: Int64
    /// The request's UUID (the replay window's key).
    var requestId: String
    /// The 32-byte MAC as sent.
    var signature: [UInt8]

    /// Reads the two headers; 401 when either is missing or not in the guide's form.
    static func parse(source: String?, auth: String?) throws(PulseRefusal) -> PulseSiteRequest {
        func unauthorized(_ reason: String) -> PulseRefusal { PulseRefusal(401, "unauthorized", reason) }
        guard let source, !source.isEmpty, source.utf8.count <= 128,
            source.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw unauthorized("X-Pulse-Source is required") }
        guard let auth else { throw unauthorized("X-Pulse-Auth is required") }
        let parts = auth.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 4, parts[0] == "v2" else {
            throw unauthorized("X-Pulse-Auth must be \"v2 <unix seconds> <requestId> <signature>\"")
        }
        guard parts[1].count <= 12, parts[1].utf8.allSatisfy({ (48...57).contains($0) }), let seconds = Int64(parts[1])
        else { throw unauthorized("X-Pulse-Auth: the time must be unix seconds") }
        let requestId = String(parts[2])
        guard (1...128).contains(requestId.utf8.count), requestId.utf8.allSatisfy(Self.isIdByte) else {
            throw unauthorized("X-Pulse-Auth: the requestId must be a UUID")
        }
        guard let mac = try? Base64.urlDecode(String(parts[3])), mac.count == 32 else {
            throw unauthorized("X-Pulse-Auth: the signature must be base64url of 32 bytes")
        }
        return PulseSiteRequest(sourceId: source, seconds: seconds, requestId: requestId, signature: mac)
    }

    static func isIdByte(_ b: UInt8) -> Bool {
        (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b) || b == 45
    }

    /// The signed string of the guide: `POST`, the path, the seconds, the requestId and the body's
    /// SHA-256 in lower-case hex, joined by `\n`.
    static func canonical(path: String, seconds: Int64, requestId: String, body: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(5 + path.utf8.count + 21 + requestId.utf8.count + 2 + 64)
        out += "POST\n".utf8
        out += path.utf8
        out.append(0x0A)
        out += String(seconds).utf8
        out.append(0x0A)
        out += requestId.utf8
        out.append(0x0A)
        Hex.append(SHA256.hash(body), to: &out)
        return out
    }

    /// 401 `stale` unless `seconds` is within `maxSkew` seconds of `now`.
    func checkFresh(now: Int64, maxSkew: Int64) throws(PulseRefusal) {
        guard abs(now - seconds) <= maxSkew else {
            throw PulseRefusal(401, "stale", "X-Pulse-Auth time is more than \(maxSkew) s from the relay's clock")
        }
    }

    /// 401 `bad_signature` unless the signature is the HMAC of the canonical string under `key`
    /// (compared in constant time).
    func verify(key: [UInt8], path: String, body: [UInt8]) throws(PulseRefusal) {
        let message = Self.canonical(path: path, seconds: seconds, requestId: requestId, body: body)
        guard HMACSHA256.isValid(signature, key: key, message: message) else {
            throw PulseRefusal(401, "bad_signature", "the signature does not verify with this site's key")
        }
    }
}
