import Foundation

/// The rule for device-supplied URLs (Web Push endpoints, relay and push URLs, contract §6):
/// they must be https and may not reach loopback or private addresses unless the channel lists
/// the host in `allow-hosts:`.
///
/// ``check(_:field:allowHosts:)`` refuses the obvious cases when a device registers, with a clear
/// field error. It cannot be complete (`127.1`, `0x7f000001` or a name that resolves to loopback look
/// harmless as text), so the rule is enforced where it can be: a request to a device-supplied URL
/// carries ``addressPolicy(for:allowHosts:)``, and the HTTP client checks the address it connects to.
public enum URLPolicy {
    /// The ``AddressPolicy`` for a request to the device-supplied `url`: ``AddressPolicy/any`` when
    /// `allowHosts` names its host (`host` or `host:port`, compared case-insensitively), else
    /// ``AddressPolicy/publicOnly``.
    public static func addressPolicy(for url: String, allowHosts: [String]) -> AddressPolicy {
        guard !allowHosts.isEmpty, let comps = URLComponents(string: url) else { return .publicOnly }
        return isAllowListed(comps, allowHosts: allowHosts) ? .any : .publicOnly
    }

    /// Whether `allowHosts` names the host (or `host:port`) of `comps`.
    public static func isAllowListed(_ comps: URLComponents, allowHosts: [String]) -> Bool {
        guard !allowHosts.isEmpty, let host = comps.host?.lowercased(), !host.isEmpty else { return false }
        let hostPort = comps.port.map { "\(host):\($0)" } ?? host
        return allowHosts.contains(where: { $0.lowercased() == host || $0.lowercased() == hostPort })
    }

    /// Checks `url`; `field` names it in the error.
    /// - Returns: The parsed URL, so that a caller needing its parts does not parse it again.
    @discardableResult
    public static func check(_ url: String, field: String, allowHosts: [String]) throws(ValidationError)
        -> URLComponents
    {
        guard let comps = URLComponents(string: url), let host = comps.host?.lowercased(), !host.isEmpty else {
            throw ValidationError(field: field, "not a valid URL")
        }
        if isAllowListed(comps, allowHosts: allowHosts) { return comps }
        guard comps.scheme?.lowercased() == "https" else { throw ValidationError(field: field, "must be an https URL") }
        if isPrivate(host) {
            throw ValidationError(
                field: field, "host \(host) is loopback or private; list it in allow-hosts to permit it")
        }
        return comps
    }

    /// Whether `host` names loopback, link-local, private or unspecified space: a local name, or an IP
    /// literal in any form (``AddressPolicy/literalRefusal(host:)``). Names that resolve to such space
    /// are caught when connecting.
    public static func isPrivate(_ host: String) -> Bool {
        if AddressPolicy.literalRefusal(host: host) != nil { return true }
        var h = Substring(host)
        while let c = h.first, c == "[" || c == "]" { h = h.dropFirst() }
        while let c = h.last, c == "[" || c == "]" { h = h.dropLast() }
        if h == "localhost" || h.hasSuffix(".localhost") || h.hasSuffix(".local") || h.hasSuffix(".internal") {
            return true
        }
        let parts = h.split(separator: ".").compactMap { UInt8($0) }
        if parts.count == 4, h.split(separator: ".").count == 4 {
            switch (parts[0], parts[1]) {
            case (127, _), (10, _), (0, _), (169, 254), (192, 168), (100, 64...127): return true
            case (172, 16...31): return true
            default: return false
            }
        }
        if h.contains(":") {
            let l = h.lowercased()
            return l == "::1" || l == "::" || l.hasPrefix("fe80") || l.hasPrefix("fc") || l.hasPrefix("fd")
                || l.hasPrefix("::ffff:")
        }
        return false
    }
}
