import Foundation

/// Which peer addresses a request may connect to, checked by the ``HTTPTransport`` when the connection is
/// made (on the address the host name resolved to), and again before a request reuses a connection.
///
/// Checking a URL's text cannot keep a device-supplied URL away from internal services: `127.1`,
/// `2130706433`, `0x7f000001`, `[::ffff:7f00:1]` and a host name that resolves to loopback all reach
/// `127.0.0.1`. So the check runs on the socket address libcurl is about to connect to.
public enum AddressPolicy: Sendable, Equatable {
    /// Any address: endpoints the operator configured (APNs, FCM, webhooks, relays, a test server).
    case any
    /// Only public unicast addresses: URLs a device supplied (Web Push endpoints, relay push URLs).
    /// Loopback, private, shared (CGNAT), link-local, unique-local, multicast, unspecified, broadcast
    /// and reserved addresses, and IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms of them, are
    /// refused with ``HTTPError/Code/blockedAddress``.
    case publicOnly

    /// Why `address` may not be reached under ``publicOnly``, or nil when it is a public address.
    /// - Parameter address: An IPv4 (4 bytes) or IPv6 (16 bytes) address in network order; any other
    ///   length is refused.
    /// - Returns: A short name of the address class (`loopback`, `private`, …), or nil.
    public static func refusal(for address: [UInt8]) -> String? {
        switch address.count {
        case 4: return refusal(v4: address[0], address[1], address[2], address[3])
        case 16: return refusal(v6: address)
        default: return "not an IP address"
        }
    }

    /// Why the textual IP address `text` (as `inet_pton` reads it: dotted quad or RFC 4291 text) may not
    /// be reached under ``publicOnly``; nil when it is public. Text that is not an IP address is refused.
    public static func refusal(forIP text: String) -> String? {
        guard let bytes = parseIP(text) else { return "not an IP address" }
        return refusal(for: bytes)
    }

    /// Why the URL host `host` (an IP literal in any form a resolver accepts: `127.1`, `2130706433`,
    /// `0x7f000001`, `0177.0.0.1`, `[::ffff:7f00:1]`) may not be reached under ``publicOnly``; nil when
    /// it is a public address or not an IP literal at all (a name: only its resolved address can tell).
    /// An early, clearer refusal at registration; the connect-time check is what enforces the rule.
    public static func literalRefusal(host: String) -> String? {
        var h = Substring(host)
        if h.first == "[", h.last == "]" { h = h.dropFirst().dropLast() }
        if h.last == "." { h = h.dropLast() }
        let text = String(h)
        var v6 = in6_addr()
        if text.contains(":") {
            guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
            return refusal(for: withUnsafeBytes(of: &v6) { Array($0) })
        }
        // inet_aton reads the numeric IPv4 forms URL parsers and resolvers accept (1 to 4 parts, each
        // decimal, octal with a leading 0 or hex with 0x).
        var v4 = in_addr()
        guard !text.isEmpty, text.first?.isNumber == true, inet_aton(text, &v4) != 0 else { return nil }
        return refusal(for: withUnsafeBytes(of: &v4) { Array($0) })
    }

    /// The bytes of a textual IPv4 or IPv6 address (`inet_pton`), or nil.
    static func parseIP(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    private static func refusal(v4 a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> String? {
        switch (a, b, c) {
        case (0, _, _): return "unspecified"
        case (10, _, _): return "private"
        case (100, 64...127, _): return "shared (CGNAT)"
        case (127, _, _): return "loopback"
        case (169, 254, _): return "link-local"
        case (172, 16...31, _): return "private"
        case (192, 0, 0), (192, 0, 2), (198, 51, 100), (203, 0, 113), (198, 18...19, _): return "reserved"
        case (192, 168, _): return "private"
        case (224...239, _, _): return "multicast"
        case (255, 255, 255) where d == 255: return "broadcast"
        case (240...255, _, _): return "reserved"
        default: return nil
        }
    }

    private static func refusal(v6 x: [UInt8]) -> String? {
        let zeroPrefix = x[0..<10].allSatisfy { $0 == 0 }
        if zeroPrefix && x[10] == 0 && x[11] == 0 {
            // ::/96: unspecified, loopback, or the deprecated IPv4-compatible form.
            if x[12..<15].allSatisfy({ $0 == 0 }) {
                if x[15] == 0 { return "unspecified" }
                if x[15] == 1 { return "loopback" }
            }
            return refusal(v4: x[12], x[13], x[14], x[15]).map { "\($0) (IPv4-compatible)" }
        }
        if zeroPrefix && x[10] == 0xFF && x[11] == 0xFF {
            return refusal(v4: x[12], x[13], x[14], x[15]).map { "\($0) (IPv4-mapped)" }
        }
        // 64:ff9b::/96, NAT64's well-known prefix, embeds an IPv4 address; 64:ff9b:1::/48 is for local use.
        if x[0] == 0x00, x[1] == 0x64, x[2] == 0xFF, x[3] == 0x9B {
            if x[4] == 0, x[5] == 1 { return "private (local NAT64)" }
            if x[4..<12].allSatisfy({ $0 == 0 }) {
                return refusal(v4: x[12], x[13], x[14], x[15]).map { "\($0) (NAT64)" }
            }
        }
        // 2002::/16, 6to4, embeds an IPv4 address in bytes 2...5.
        if x[0] == 0x20, x[1] == 0x02 { return refusal(v4: x[2], x[3], x[4], x[5]).map { "\($0) (6to4)" } }
        if x[0] == 0x20, x[1] == 0x01, x[2] == 0x0D, x[3] == 0xB8 { return "reserved (documentation)" }
        if x[0] == 0x01, x[1..<8].allSatisfy({ $0 == 0 }) { return "reserved (discard)" }
        if x[0] & 0xFE == 0xFC { return "unique-local" }
        if x[0] == 0xFE, x[1] & 0xC0 == 0x80 { return "link-local" }
        if x[0] == 0xFE, x[1] & 0xC0 == 0xC0 { return "site-local" }
        if x[0] == 0xFF { return "multicast" }
        return nil
    }
}
