import ChannelAPI

extension ExecChannel {
    /// The factory registered under `exec`. Keys: `command` (required, a list: the program and its
    /// arguments, run in the config file's directory), `config` (a mapping handed to the plugin),
    /// `max-batches` (batches in flight, default 16) and `max-line-bytes` (longest answer line,
    /// default 8 MiB); the shared `platforms` (required) and `timeout` (per batch, default 30 s).
    public static let factory = ChannelFactory(type: "exec", defaultPlatforms: ["exec"]) {
        config, context throws(ConfigError) in
        guard let command = try config.stringList("command"), !command.isEmpty, !command[0].isEmpty else {
            throw config.error(
                at: "command", "channel \(config.name): command must be a non-empty list (program, arguments…)")
        }
        var platforms: [String]?
        var limits = ExecLimits()
        for e in try config.node.mapping("channel \(config.name)") {
            if e.key == "platforms" { platforms = try e.value.stringList("platforms") }
            if e.key == "timeout" { limits.timeout = try e.value.duration("timeout") }
        }
        guard let platforms, !platforms.isEmpty else {
            throw config.error(
                at: nil, "channel \(config.name): an exec channel needs platforms: (the platforms its plugin declares)")
        }
        limits.maxBatches = try config.int("max-batches", in: 1...1024) ?? limits.maxBatches
        limits.maxLine = try config.int("max-line-bytes", in: 4096...(256 << 20)) ?? limits.maxLine
        var secrets: [String] = []
        let json = try config.node("config").map { n throws(ConfigError) in
            try jsonValue(n, secrets: &secrets, secret: false)
        }
        guard json == nil || json?.objectValue != nil else {
            throw config.error(at: "config", "config must be a mapping")
        }
        if config.offline { return DryRunChannel(name: config.name) }
        let setup = Setup(
            name: config.name, command: command, directory: config.node.baseDirectory, platforms: platforms,
            config: json ?? .object([:]), configSecrets: secrets, limits: limits)
        return ExecChannel(setup: setup, clock: context.clock, logger: context.logger)
    }

    /// A config node as JSON: scalars as strings (environment variables expanded), null as null.
    /// Collects the values under keys named like secrets (at any depth) into `secrets`.
    static func jsonValue(_ node: ConfigNode, secrets: inout [String], secret: Bool) throws(ConfigError) -> JSONValue {
        if node.isNull { return .null }
        if node.tree.mapping != nil {
            var o: [String: JSONValue] = [:]
            for e in try node.mapping("config") {
                o[e.key] = try jsonValue(e.value, secrets: &secrets, secret: secret || Redaction.isSecretName(e.key))
            }
            return .object(o)
        }
        if node.tree.sequence != nil {
            var a: [JSONValue] = []
            for n in try node.sequence("config") { a.append(try jsonValue(n, secrets: &secrets, secret: secret)) }
            return .array(a)
        }
        let s = try node.string("config")
        if secret, !s.isEmpty { secrets.append(s) }
        return .string(s)
    }
}
