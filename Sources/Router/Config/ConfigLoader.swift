import ChannelAPI
import Foundation
import HeraldPostgres
import HeraldYAML

/// Reads YAML into a ``HeraldConfig``: schema checks, `${VAR}` expansion, positions on every error.
/// Each channel's own keys are validated by its factory (see ``ChannelFactory``), which
/// ``RouterGraph`` calls when it builds the channels.
public enum ConfigLoader {
    /// Keys every channel accepts; the router reads them, the factory gets the rest.
    public static let commonChannelKeys: Set<String> = [
        "type", "platforms", "enabled", "timeout", "retry", "badge", "allow-hosts",
    ]

    /// Loads and checks the config at `path`. `offline` loads it for a dry run (see
    /// ``ConfigNode/offline``): unset variables in strings and paths are kept as `${NAME}`, and no
    /// file the config names is checked.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment, registry: ChannelRegistry,
        offline: Bool = false
    ) throws(ConfigError) -> HeraldConfig {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ConfigError(file: path, mark: nil, "cannot read config file: \(error.localizedDescription)")
        }
        let text = try decodeUTF8(bytes, file: path)
        let base = URL(fileURLWithPath: path).deletingLastPathComponent().path
        return try parse(
            text, file: path, baseDirectory: base, environment: environment, registry: registry, offline: offline)
    }

    /// Decodes config bytes as UTF-8 (a leading byte-order mark is allowed); anything else is a
    /// ``ConfigError`` at the line and column of the first byte that is not valid UTF-8.
    public static func decodeUTF8(_ bytes: [UInt8], file: String) throws(ConfigError) -> String {
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
        if let mark = firstInvalidUTF8(body) {
            throw ConfigError(
                file: file, mark: mark.mark,
                "the config is not valid UTF-8: byte 0x\(String(mark.byte, radix: 16, uppercase: true)) at byte offset \(mark.offset + bytes.count - body.count)"
            )
        }
        return String(decoding: body, as: UTF8.self)
    }

    /// The first byte of `bytes` that does not start a valid UTF-8 sequence (a bad lead byte, or the
    /// lead byte of a truncated, overlong or surrogate sequence): its offset, value and 1-based line
    /// and column (the column counts characters, as YAML positions do).
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> (offset: Int, byte: UInt8, mark: ConfigMark)? {
        var line = 1
        var column = 1
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch b {
            case 0x00...0x7F: length = 1
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                high = 0x9F
            case 0xF0:
                length = 4
                low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                high = 0x8F
            default: return (i, b, ConfigMark(line: line, column: column))
            }
            for k in 1..<length {
                guard i + k < bytes.count else { return (i, b, ConfigMark(line: line, column: column)) }
                let c = bytes[i + k]
                let (lo, hi) = k == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
                guard c >= lo, c <= hi else { return (i, b, ConfigMark(line: line, column: column)) }
            }
            if b == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
            i += length
        }
        return nil
    }

    /// Parses config text. `file` is used in error positions; relative paths resolve against
    /// `baseDirectory`; `offline` as in ``load(path:environment:registry:offline:)``.
    public static func parse(
        _ text: String, file: String = "<config>", baseDirectory: String = FileManager.default.currentDirectoryPath,
        environment: [String: String] = ProcessInfo.processInfo.environment, registry: ChannelRegistry,
        offline: Bool = false
    ) throws(ConfigError) -> HeraldConfig {
        let root: YAMLNode?
        do {
            root = try YAMLParser.parse(text)
        } catch {
            throw ConfigError(file: file, mark: error.mark, error.message)
        }
        guard let root else { throw ConfigError(file: file, mark: nil, "the config is empty") }
        let top = ConfigNode(
            yaml: root, file: file, environment: environment, baseDirectory: baseDirectory, offline: offline)
        var reader = Reader(file: file, registry: registry, environment: environment)
        return try reader.read(top)
    }

    /// Refuses a name (of a channel, a namespace, a token) that is empty, longer than 64 characters,
    /// or has other characters than ASCII letters, digits, `.`, `-` and `_`, at `node`.
    public static func checkName(_ name: String, at node: ConfigNode, what: String) throws(ConfigError) {
        guard !name.isEmpty, name.count <= 64,
            name.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" || $0 == "." })
        else { throw node.error("invalid \(what) '\(name)' (letters, digits, '.', '-', '_')") }
    }

    struct Reader {
        let file: String
        let registry: ChannelRegistry
        let environment: [String: String]
        var warnings: [ConfigWarning] = []

        mutating func read(_ top: ConfigNode) throws(ConfigError) -> HeraldConfig {
            let root = try ConfigMapping(
                top, "the config",
                keys: ["channels", "history", "http", "log", "routes", "server", "store", "tls", "version"],
                qualified: false)
            guard let v = root["version"] else { throw top.error("missing required key 'version' (use version: 1)") }
            let version = try v.int("version")
            guard version == 1 else { throw v.error("unsupported version \(version); this Herald reads version 1") }

            var store = try readStore(
                root.section(
                    "store", nullIsAbsent: true, keys: ["path", "url", "lease", "cache", "prepared-statements"]), top)
            // HERALD_STORE_URL overrides the file's store.url (as HERALD_CONFIG overrides the default path).
            if let env = environment["HERALD_STORE_URL"], !env.isEmpty {
                guard PostgresURL.isPostgresURL(env) else {
                    throw ConfigError(file: file, mark: nil, "HERALD_STORE_URL must be a postgresql:// URL")
                }
                store.url = env
            }
            var caFile: String?
            if let tls = try root.section("tls", nullIsAbsent: true, keys: ["ca-file"]), let n = tls["ca-file"] {
                let p = try n.path(tls.name("ca-file"))
                guard n.offline || FileManager.default.isReadableFile(atPath: p) else {
                    throw n.error("tls.ca-file \(p) cannot be read")
                }
                caFile = p
            }
            var http = HTTPSettings()
            if let h = try root.section("http", nullIsAbsent: true, keys: ["event-loops", "connections-per-host"]) {
                http.eventLoops = try h.int("event-loops", in: 1...16)
                http.connectionsPerHost = try h.int("connections-per-host", in: 1...64)
            }
            let history = try root.section("history", nullIsAbsent: true, keys: ["retention"])
            let retention = try history?.duration("retention") ?? .seconds(30 * 86_400)
            var logLevel: LogLevel = .warning
            if let log = try root.section("log", nullIsAbsent: true, keys: ["level"]), let n = log["level"] {
                guard let lv = LogLevel(rawValue: try n.string("log.level")) else {
                    throw n.error("log.level must be one of debug, info, warning, error")
                }
                logLevel = lv
            }
            // The server's own keys are read by HeraldServer (`ServerConfig`); here it is only a mapping.
            var server: ConfigNode?
            if let sv = root["server"], !sv.isNull {
                _ = try sv.mapping("server")
                server = sv
            }
            guard let ch = root["channels"] else { throw top.error("missing required key 'channels'") }
            let channels = try readChannels(ch)
            guard let r = root["routes"] else { throw top.error("missing required key 'routes'") }
            let routes = try readRoutes(r, channels: channels)

            // Unrouted channels are a warning: probably a typo or a forgotten route.
            var routed: Set<String> = []
            for step in routes.defaultRoute { routed.formUnion(step.deliver) }
            for (_, steps) in routes.namespaces { for s in steps { routed.formUnion(s.deliver) } }
            for c in channels where !routed.contains(c.name) {
                warnings.append(
                    ConfigWarning(
                        file: file, mark: c.mark, "channel '\(c.name)' is defined but no route delivers to it"))
            }
            return HeraldConfig(
                file: file, version: version, storePath: store.path, storeURL: store.url, storeLease: store.lease,
                storeCache: store.cache, storePreparedStatements: store.prepared,
                caFile: caFile, http: http, retention: retention, logLevel: logLevel, channels: channels,
                routes: routes, warnings: warnings, serverNode: server)
        }

        /// What `store:` sets.
        struct StoreSettings {
            var path: String
            var url: String?
            var lease: Duration?
            var cache: Int?
            var prepared = true
        }

        /// The `store:` section (nil: absent or empty).
        func readStore(_ section: ConfigMapping?, _ top: ConfigNode) throws(ConfigError) -> StoreSettings {
            let home = environment["HOME"] ?? NSHomeDirectory()
            let heraldHome =
                environment["HERALD_HOME"].map { ConfigNode.resolvePath($0, home: home, base: top.baseDirectory) }
                ?? home + "/.herald"
            var store = StoreSettings(path: heraldHome + "/herald.db")
            guard let section else { return store }
            if let n = section["path"] {
                // Dry runs open the store too (explain reads devices): its variables must be set.
                if n.hasUnresolvedVariables, let raw = n.tree.scalar { _ = try n.expand(raw) }
                store.path = try n.path("store.path")
            }
            if let n = section["url"] {
                let url = try n.string("store.url")
                guard PostgresURL.isPostgresURL(url) else {
                    throw n.error("store.url must be a postgresql:// URL (got \(PostgresURL.redacted(url).prefix(40)))")
                }
                store.url = url
            }
            if let n = section["lease"] {
                let lease = try n.duration("store.lease")
                guard lease >= .seconds(1), lease <= .seconds(3600) else {
                    throw n.error("store.lease must be between 1s and 1h")
                }
                store.lease = lease
            }
            if let n = section["cache"] {
                let text = try n.string("store.cache")
                guard let size = ConfigNode.parseSize(text), ((128 << 10)...(1 << 30)).contains(size) else {
                    throw n.error("store.cache must be a size from 128KiB to 1024MiB (2MiB, 512KiB), got \"\(text)\"")
                }
                store.cache = size
            }
            store.prepared = try section.bool("prepared-statements") ?? true
            return store
        }

        func readChannels(_ node: ConfigNode) throws(ConfigError) -> [ChannelSpec] {
            var out: [ChannelSpec] = []
            for e in try node.mapping("channels") {
                try ConfigLoader.checkName(e.key, at: e.keyNode, what: "channel name")
                out.append(try readChannel(name: e.key, keyNode: e.keyNode, node: e.value))
            }
            return out
        }

        func readChannel(name: String, keyNode: ConfigNode, node: ConfigNode) throws(ConfigError) -> ChannelSpec {
            let entries = try node.mapping("channel \(name)")
            var byKey: [String: ConfigNode] = [:]
            for e in entries { byKey[e.key] = e.value }
            guard let typeNode = byKey["type"] else { throw node.error("channel \(name): missing required key 'type'") }
            let type = try typeNode.string("type")
            guard let factory = registry.factory(for: type) else {
                throw typeNode.error(
                    "unknown channel type '\(type)' (known: \(registry.types.joined(separator: ", ")))")
            }
            var platforms =
                factory.platformsForConfig?({ key in try? byKey[key]?.string(key) }) ?? factory.defaultPlatforms
            if let p = byKey["platforms"] {
                platforms = try p.stringList("platforms")
                for (i, pl) in platforms.enumerated() {
                    guard !pl.isEmpty, pl.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                        throw (try p.sequence("platforms"))[safe: i]?.error("invalid platform name '\(pl)'")
                            ?? p.error("invalid platform name '\(pl)'")
                    }
                }
                if factory.isSink, !platforms.isEmpty {
                    throw p.error("channel \(name): a \(type) channel is a sink and serves no platforms")
                }
                if !factory.isSink, platforms.isEmpty { throw p.error("channel \(name): platforms must not be empty") }
            }
            let enabled = try byKey["enabled"].map { n throws(ConfigError) in try n.bool("enabled") } ?? true
            let timeout =
                try byKey["timeout"].map { n throws(ConfigError) in try n.duration("timeout") } ?? .seconds(30)
            guard timeout > .zero else { throw (byKey["timeout"] ?? node).error("timeout must be greater than zero") }
            var retry = RetryPolicy.default
            if let r = byKey["retry"] { retry = try readRetry(r) }
            var badgePendingTags = false
            if let b = byKey["badge"] {
                let s = try b.string("badge")
                switch s {
                case "pending-tags": badgePendingTags = true
                case "none": badgePendingTags = false
                default: throw b.error("badge must be pending-tags or none, got \"\(s)\"")
                }
            }
            let allowHosts =
                try byKey["allow-hosts"].map { n throws(ConfigError) in try n.stringList("allow-hosts") } ?? []
            return ChannelSpec(
                name: name, type: type, platforms: platforms, enabled: enabled, timeout: timeout, retry: retry,
                badgePendingTags: badgePendingTags, allowHosts: allowHosts, mark: keyNode.mark, node: node)
        }

        func readRetry(_ node: ConfigNode) throws(ConfigError) -> RetryPolicy {
            let retry = try ConfigMapping(node, "retry", keys: ["attempts", "initial", "max"])
            var policy = RetryPolicy.default
            if let n = retry["attempts"] {
                let a = try n.int("retry.attempts")
                guard (1...100).contains(a) else { throw n.error("retry.attempts must be in 1...100") }
                policy.maxAttempts = a
            }
            policy.initialDelay = try retry.duration("initial") ?? policy.initialDelay
            policy.maxDelay = try retry.duration("max") ?? policy.maxDelay
            guard policy.initialDelay <= policy.maxDelay else {
                throw node.error("retry.initial must not exceed retry.max")
            }
            return policy
        }

        func readRoutes(_ node: ConfigNode, channels: [ChannelSpec]) throws(ConfigError) -> RouteTable {
            let names = Set(channels.map(\.name))
            let routes = try ConfigMapping(node, "routes", keys: ["default", "namespaces"])
            guard let d = routes["default"] else { throw node.error("routes: missing required key 'default'") }
            var table = RouteTable(defaultRoute: try readSteps(d, route: "default", names: names), namespaces: [:])
            if let n = routes["namespaces"] {
                for ns in try n.mapping("routes.namespaces") {
                    try ConfigLoader.checkName(ns.key, at: ns.keyNode, what: "namespace")
                    table.namespaces[ns.key] = try readSteps(ns.value, route: "namespaces.\(ns.key)", names: names)
                }
            }
            return table
        }

        func readSteps(_ node: ConfigNode, route: String, names: Set<String>) throws(ConfigError) -> [RouteStep] {
            var steps: [RouteStep] = []
            var earlier: Set<String> = []
            for item in try node.sequence("route \(route)") {
                let step = try readStep(item, names: names, earlier: earlier)
                earlier.formUnion(step.deliver)
                steps.append(step)
            }
            return steps
        }

        func readStep(_ node: ConfigNode, names: Set<String>, earlier: Set<String>) throws(ConfigError) -> RouteStep {
            let e = try ConfigMapping(
                node, "route step",
                keys: [
                    "deliver", "mode", "when", "unless-delivered", "unless-registered", "timeout", "cooldown",
                ], qualified: false)
            var step = RouteStep(deliver: [], mark: node.mark)
            guard let deliver = e["deliver"] else { throw node.error("route step: missing required key 'deliver'") }
            let items = deliver.tree.scalar != nil ? [deliver] : try deliver.sequence("deliver")
            guard !items.isEmpty else { throw deliver.error("deliver must name at least one channel") }
            for item in items {
                let n = try item.string("deliver")
                guard names.contains(n) else {
                    throw item.error("unknown channel '\(n)' (defined: \(names.sorted().joined(separator: ", ")))")
                }
                guard !step.deliver.contains(n) else { throw item.error("channel '\(n)' is listed twice") }
                step.deliver.append(n)
            }
            if let n = e["mode"] {
                let m = try n.string("mode")
                guard let mode = RouteStep.Mode(rawValue: m) else {
                    throw n.error("mode must be all or first, got \"\(m)\"")
                }
                step.mode = mode
            }
            if let w = try e.section("when", keys: ["type", "severity"]) {
                step.whenTypes = try w.stringList("type")
                if let list = w["severity"] {
                    var sev: [Severity] = []
                    for s in list.tree.scalar != nil ? [list] : try list.sequence("when.severity") {
                        let text = try s.string("when.severity")
                        guard let v = Severity(rawValue: text) else {
                            throw s.error("unknown severity '\(text)' (expected info, success, warning, error)")
                        }
                        sev.append(v)
                    }
                    step.whenSeverities = sev
                }
            }
            if let u = e["unless-delivered"] {
                step.unlessDelivered = try readUnlessDelivered(u, names: names, earlier: earlier)
            }
            for item in try e["unless-registered"]?.sequence("unless-registered") ?? [] {
                let n = try item.string("unless-registered")
                guard names.contains(n) else { throw item.error("unknown channel '\(n)' in unless-registered") }
                step.unlessRegistered.append(n)
            }
            step.timeout = try e.duration("timeout")
            step.cooldown = try e.duration("cooldown")
            return step
        }

        /// `unless-delivered: any`, or the channels of earlier steps it names.
        func readUnlessDelivered(_ node: ConfigNode, names: Set<String>, earlier: Set<String>) throws(ConfigError)
            -> RouteStep.UnlessDelivered
        {
            if let s = node.tree.scalar, s == "any" { return .any }
            var list: [String] = []
            for item in try node.sequence("unless-delivered") {
                let n = try item.string("unless-delivered")
                guard names.contains(n) else { throw item.error("unknown channel '\(n)' in unless-delivered") }
                if !earlier.contains(n) {
                    throw item.error("unless-delivered names '\(n)', which no earlier step of this route delivers to")
                }
                list.append(n)
            }
            return .channels(list)
        }
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
