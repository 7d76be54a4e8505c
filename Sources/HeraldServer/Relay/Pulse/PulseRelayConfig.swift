import ChannelAPI

/// The `pulse` relay's own keys (docs/pulse-relay.md): `key-file` (required: the 32-byte key that
/// seals pushKeys at rest), `attributes-type` (the app's ActivityAttributes type, for `start`),
/// `max-body`, `max-skew`, and the limits, whose defaults are the guide's: `pushes-per-hour` (600),
/// `starts-per-hour` (4), `update-interval` (1s), `start-interval` (30s), `alert-interval` (30s),
/// `start-wait` (60s).
struct PulseRelayConfig: Sendable {
    var vault: PulseKeyVault
    var attributesType = "PulseAttributes"
    var maxBody = 8192
    var limits = PulseLimits()

    static let keys: Set<String> = [
        "key-file", "attributes-type", "max-body", "max-skew", "pushes-per-hour", "starts-per-hour",
        "update-interval", "start-interval", "alert-interval", "start-wait",
    ]

    static func read(_ module: RelayModuleConfig) throws(ConfigError) -> PulseRelayConfig {
        let what = "server.relays.pulse"
        guard let keyNode = module.ownKeys.first(where: { $0.key == "key-file" })?.value else {
            throw module.node.error("\(what) needs key-file: a file of 32 random bytes (openssl rand -base64 32)")
        }
        let vault: PulseKeyVault
        switch PulseKeyVault.load(try keyNode.string("\(what).key-file")) {
        case .success(let v): vault = v
        case .failure(let e): throw keyNode.error("\(what).key-file: \(e.reason)")
        }
        var c = PulseRelayConfig(vault: vault)
        func millis(_ v: ConfigNode, _ key: String, _ range: ClosedRange<Duration>) throws(ConfigError) -> Int64 {
            let d = try v.duration("\(what).\(key)")
            guard range.contains(d) else {
                throw v.error("\(what).\(key) must be \(range.lowerBound) to \(range.upperBound)")
            }
            return d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        }
        func count(_ v: ConfigNode, _ key: String, _ range: ClosedRange<Int>) throws(ConfigError) -> Int {
            let n = try v.int("\(what).\(key)")
            guard range.contains(n) else {
                throw v.error("\(what).\(key) must be \(range.lowerBound) to \(range.upperBound)")
            }
            return n
        }
        for (key, v) in module.ownKeys {
            switch key {
            case "attributes-type":
                c.attributesType = try v.string("\(what).attributes-type")
                guard !c.attributesType.isEmpty else { throw v.error("\(what).attributes-type must not be empty") }
            case "max-body": c.maxBody = try count(v, key, 1024...65536)
            case "max-skew": c.limits.maxSkew = try millis(v, key, .seconds(1)...(.seconds(3600))) / 1000
            case "pushes-per-hour": c.limits.pushesPerHour = try count(v, key, 1...1_000_000)
            case "starts-per-hour": c.limits.startsPerHour = try count(v, key, 1...1_000_000)
            case "update-interval": c.limits.updateSpacing = try millis(v, key, .zero...(.seconds(3600)))
            case "start-interval": c.limits.startSpacing = try millis(v, key, .zero...(.seconds(3600)))
            case "alert-interval": c.limits.alertSpacing = try millis(v, key, .zero...(.seconds(3600)))
            case "start-wait": c.limits.startWait = try millis(v, key, .zero...(.seconds(600)))
            default: break
            }
        }
        return c
    }
}
