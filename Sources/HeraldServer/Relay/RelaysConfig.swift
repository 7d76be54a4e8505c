import ChannelAPI
import Foundation

/// Who may call a relay's routes.
public struct RelayAccess: Sendable, Equatable {
    /// `auth:`: `token` (a bearer token with scope `relay`, or an allowed address) or `none`
    /// (anyone; only on a loopback listen address).
    public var open: Bool
    /// `allow:` client addresses let in without a token (exact numeric addresses or IPv4 `a.b.c.d/n`).
    public var allow: [String]

    /// Creates an access rule.
    public init(open: Bool = false, allow: [String] = []) {
        self.open = open
        self.allow = allow
    }

    /// Whether `address` is on the allow-list.
    public func allows(_ address: String) -> Bool {
        let plain = address.hasPrefix("::ffff:") ? String(address.dropFirst(7)) : address
        return allow.contains { RelayAccess.matches(plain, $0) || RelayAccess.matches(address, $0) }
    }

    /// `address` against an exact address or an IPv4 CIDR block (pure).
    static func matches(_ address: String, _ rule: String) -> Bool {
        let parts = rule.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2, let bits = Int(parts[1]), (0...32).contains(bits), let net = ipv4(parts[0]),
            let a = ipv4(address)
        else { return address == rule }
        let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
        return a & mask == net & mask
    }

    static func ipv4(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: UInt32 = 0
        for p in parts {
            guard let b = UInt8(p) else { return nil }
            out = out << 8 | UInt32(b)
        }
        return out
    }
}

/// One relay under `server.relays`: the module's name and its common settings.
public struct RelaySettings: Sendable {
    /// The module config (name, channel, the section).
    public var module: RelayModuleConfig
    /// Who may call it.
    public var access: RelayAccess
    /// Requests per second per caller (token name or client address), and the burst.
    public var ratePerSecond: Double
    /// Requests a caller may make at once before the rate applies.
    public var burst: Int
}

/// The `server.relays` section (docs/relay-server.md): a standalone reader over the config node, called
/// from the `server:` parser.
public enum RelaysConfig {
    /// The keys every relay reads.
    public static let commonKeys: Set<String> = ["channel", "auth", "allow", "rate-limit", "burst"]

    /// Reads `server.relays`; `loopback` is whether the server listens on loopback only (`auth:
    /// none` is refused otherwise). Unknown protocols and keys are config errors.
    public static func read(
        _ node: ConfigNode?, loopback: Bool, modules: [InboundRelayModule] = InboundRelayModule.builtIn
    ) throws(ConfigError) -> [RelaySettings] {
        guard let node, !node.isNull else { return [] }
        var out: [RelaySettings] = []
        for entry in try node.mapping("server.relays") {
            guard let module = modules.first(where: { $0.name == entry.key }) else {
                throw entry.keyNode.error(
                    "unknown relay protocol '\(entry.key)' in server.relays (expected "
                        + modules.map(\.name).joined(separator: ", ") + ")")
            }
            out.append(try readOne(entry.value, module: module, loopback: loopback))
        }
        return out
    }

    static func readOne(
        _ node: ConfigNode, module: InboundRelayModule, loopback: Bool
    ) throws(ConfigError) -> RelaySettings {
        let what = "server.relays.\(module.name)"
        var channel: String?
        var access = RelayAccess()
        var rate = 50.0
        var burst = 100
        var own: [(key: String, value: ConfigNode)] = []
        for e in try node.mapping(what) {
            switch e.key {
            case "channel": channel = try e.value.string("\(what).channel")
            case "auth":
                switch try e.value.string("\(what).auth") {
                case "token": access.open = false
                case "none":
                    guard loopback else {
                        throw e.value.error(
                            "\(what).auth: none is only allowed when server.listen is a loopback address; "
                                + "use tokens with scope relay or allow: [addresses]")
                    }
                    access.open = true
                default: throw e.value.error("\(what).auth must be token or none")
                }
            case "allow":
                access.allow = try e.value.stringList("\(what).allow")
                for a in access.allow where a.isEmpty || a.contains(" ") {
                    throw e.value.error("\(what).allow: '\(a)' is not a numeric address or a.b.c.d/n block")
                }
            case "rate-limit":
                let text = try e.value.string("\(what).rate-limit")
                guard let r = RelaysConfig.rate(text) else {
                    throw e.value.error("\(what).rate-limit must be a rate like 50/s or 600/m, got \"\(text)\"")
                }
                rate = r
            case "burst":
                burst = try e.value.int("\(what).burst")
                guard (1...1_000_000).contains(burst) else { throw e.value.error("\(what).burst must be 1 to 1000000") }
            case let k where module.keys.contains(k): own.append((k, e.value))
            default:
                let expected = (commonKeys.union(module.keys)).sorted().joined(separator: ", ")
                throw e.keyNode.error("unknown key '\(e.key)' in \(what) (expected \(expected))")
            }
        }
        guard let channel, !channel.isEmpty else {
            throw node.error("\(what) needs channel: the apns channel it delivers through")
        }
        let config = RelayModuleConfig(name: module.name, channel: channel, node: node, ownKeys: own)
        return RelaySettings(module: config, access: access, ratePerSecond: rate, burst: burst)
    }

    /// `N/s`, `N/m` or `N/h` as requests per second; nil unless positive and finite.
    static func rate(_ text: String) -> Double? {
        let per: [Character: Double] = ["s": 1, "m": 60, "h": 3600]
        guard let unit = text.last, let seconds = per[unit], text.dropLast().hasSuffix("/"),
            let n = Double(text.dropLast(2).trimmingCharacters(in: .whitespaces)), n.isFinite, n > 0
        else { return nil }
        return n / seconds
    }
}
