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
            throw ConfigError(file: file, mark: error.mark.map(ConfigMark.init), error.message)
        }
        guard let root else { throw ConfigError(file: file, mark: nil, "the config is empty") }
        let top = ConfigNode(
            yaml: root, file: file, environment: environment, baseDirectory: baseDirectory, offline: offline)
        var reader = Reader(file: file, registry: registry, environment: environment)
        return try reader.read(top)
    }

    struct Reader {
        let file: String
        let registry: ChannelRegistry
        let environment: [String: String]
        var warnings: [ConfigWarning] = []

        mutating func read(_ top: ConfigNode) throws(ConfigError) -> HeraldConfig {
            let entries = try top.mapping("the config")
            let allowed: Set<String> = [
                "version", "store", "tls", "http", "history", "log", "channels", "routes", "server",
            ]
            var byKey: [String: (keyNode: ConfigNode, value: ConfigNode)] = [:]
            for e in entries {
                guard allowed.contains(e.key) else {
                    throw e.keyNode.error(
                        "unknown key '\(e.key)' (expected one of \(allowed.sorted().joined(separator: ", ")))")
                }
                byKey[e.key] = (e.keyNode, e.value)
            }
            guard let v = byKey["version"] else { throw top.error("missing required key 'version' (use version: 1)") }
            let version = try v.value.int("version")
            guard version == 1 else {
                throw v.value.error("unsupported version \(version); this Herald reads version 1")
            }

            let home = environment["HOME"] ?? NSHomeDirectory()
            let heraldHome =
                environment["HERALD_HOME"].map { ConfigNode.resolvePath($0, home: home, base: top.baseDirectory) }
                ?? home + "/.herald"
            var storePath = heraldHome + "/herald.db"
            var storeURL: String?
            var storeLease: Duration?
            var storeCache: Int?
            var storePrepared = true
            if let s = byKey["store"]?.value, !s.isNull {
                for e in try s.mapping("store") {
                    switch e.key {
                    case "path":
                        // Dry runs open the store too (explain reads devices): its variables must be set.
                        if e.value.hasUnresolvedVariables, let raw = e.value.tree.scalar {
                            _ = try e.value.expand(raw)
                        }
                        storePath = try e.value.path("store.path")
                    case "url":
                        let url = try e.value.string("store.url")
                        guard PostgresURL.isPostgresURL(url) else {
                            throw e.value.error(
                                "store.url must be a postgresql:// URL (got \(PostgresURL.redacted(url).prefix(40)))")
                        }
                        storeURL = url
                    case "lease":
                        let lease = try e.value.duration("store.lease")
                        guard lease >= .seconds(1), lease <= .seconds(3600) else {
                            throw e.value.error("store.lease must be between 1s and 1h")
                        }
                        storeLease = lease
                    case "cache":
                        let text = try e.value.string("store.cache")
                        guard let size = ServerConfig.parseSize(text), ((128 << 10)...(1 << 30)).contains(size) else {
                            throw e.value.error(
                                "store.cache must be a size from 128KiB to 1024MiB (2MiB, 512KiB), got \"\(text)\"")
                        }
                        storeCache = size
                    case "prepared-statements":
                        storePrepared = try e.value.bool("store.prepared-statements")
                    default:
                        throw e.keyNode.error(
                            "unknown key '\(e.key)' in store (expected path, url, lease, cache, prepared-statements)")
                    }
                }
            }
            // HERALD_STORE_URL overrides the file's store.url (as HERALD_CONFIG overrides the default path).
            if let env = environment["HERALD_STORE_URL"], !env.isEmpty {
                guard PostgresURL.isPostgresURL(env) else {
                    throw ConfigError(file: file, mark: nil, "HERALD_STORE_URL must be a postgresql:// URL")
                }
                storeURL = env
            }
            var caFile: String?
            if let t = byKey["tls"]?.value, !t.isNull {
                for e in try t.mapping("tls") {
                    switch e.key {
                    case "ca-file":
                        let p = try e.value.path("tls.ca-file")
                        guard e.value.offline || FileManager.default.isReadableFile(atPath: p) else {
                            throw e.value.error("tls.ca-file \(p) cannot be read")
                        }
                        caFile = p
                    default: throw e.keyNode.error("unknown key '\(e.key)' in tls (expected ca-file)")
                    }
                }
            }
            var http = HTTPSettings()
            if let h = byKey["http"]?.value, !h.isNull {
                for e in try h.mapping("http") {
                    switch e.key {
                    case "event-loops": http.eventLoops = try bounded(e.value, "http.event-loops", 1...16)
                    case "connections-per-host":
                        http.connectionsPerHost = try bounded(e.value, "http.connections-per-host", 1...64)
                    default:
                        throw e.keyNode.error(
                            "unknown key '\(e.key)' in http (expected event-loops, connections-per-host)")
                    }
                }
            }
            var retention: Duration = .seconds(30 * 86_400)
            if let h = byKey["history"]?.value, !h.isNull {
                for e in try h.mapping("history") {
                    switch e.key {
                    case "retention": retention = try e.value.duration("history.retention")
                    default: throw e.keyNode.error("unknown key '\(e.key)' in history (expected retention)")
                    }
                }
            }
            var logLevel: LogLevel = .warning
            if let l = byKey["log"]?.value, !l.isNull {
                for e in try l.mapping("log") {
                    switch e.key {
                    case "level":
                        let s = try e.value.string("log.level")
                        guard let lv = LogLevel(rawValue: s) else {
                            throw e.value.error("log.level must be one of debug, info, warning, error")
                        }
                        logLevel = lv
                    default: throw e.keyNode.error("unknown key '\(e.key)' in log (expected level)")
                    }
                }
            }
            var server = ServerConfig()
            if let sv = byKey["server"]?.value, !sv.isNull { server = try readServer(sv) }
            guard let ch = byKey["channels"] else { throw top.error("missing required key 'channels'") }
            let channels = try readChannels(ch.value)
            guard let r = byKey["routes"] else { throw top.error("missing required key 'routes'") }
            let routes = try readRoutes(r.value, channels: channels)

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
                file: file, version: version, storePath: storePath, storeURL: storeURL, storeLease: storeLease,
                storeCache: storeCache, storePreparedStatements: storePrepared,
                caFile: caFile, http: http, retention: retention, logLevel: logLevel, channels: channels,
                routes: routes, warnings: warnings, server: server)
        }

        /// The `server:` section (http-api.md §1).
        func readServer(_ node: ConfigNode) throws(ConfigError) -> ServerConfig {
            var server = ServerConfig()
            for e in try node.mapping("server") {
                switch e.key {
                case "listen":
                    let text = try e.value.string("server.listen")
                    guard let (host, port) = ServerConfig.parseListen(text) else {
                        throw e.value.error(
                            "server.listen must be host:port with a numeric address (127.0.0.1:8686, [::1]:8686, "
                                + "0.0.0.0:8686), got \"\(text)\"")
                    }
                    server.host = host
                    server.port = port
                    server.listenMark = e.value.mark
                case "tls":
                    var cert: String?
                    var key: String?
                    for t in try e.value.mapping("server.tls") {
                        switch t.key {
                        case "cert": cert = try t.value.path("server.tls.cert")
                        case "key": key = try t.value.path("server.tls.key")
                        default: throw t.keyNode.error("unknown key '\(t.key)' in server.tls (expected cert, key)")
                        }
                        if let p = t.key == "cert" ? cert : key, !t.value.offline,
                            !FileManager.default.isReadableFile(atPath: p)
                        {
                            throw t.value.error("server.tls.\(t.key) \(p) cannot be read")
                        }
                    }
                    guard let cert, let key else { throw e.value.error("server.tls needs both cert and key") }
                    server.tls = TLSFiles(certificate: cert, key: key)
                case "max-body":
                    let text = try e.value.string("server.max-body")
                    // At most 1 MiB: no request of the API needs more (a notification's fields are capped
                    // far below it), and each connection may hold one body of this size.
                    guard let size = ServerConfig.parseSize(text), (1...ServerConfig.maxBodyCeiling).contains(size)
                    else {
                        throw e.value.error(
                            "server.max-body must be a size from 1B to 1MiB (65536, 512B, 64KiB, 1MiB), got \"\(text)\""
                        )
                    }
                    server.maxBody = size
                case "tokens": server.tokens = try readTokens(e.value)
                case "rate-limit":
                    for r in try e.value.mapping("server.rate-limit") {
                        switch r.key {
                        case "per-token":
                            let text = try r.value.string("server.rate-limit.per-token")
                            guard let rate = Reader.parseRate(text) else {
                                throw r.value.error(
                                    "server.rate-limit.per-token must be a rate like 50/s or 600/m, got \"\(text)\"")
                            }
                            server.ratePerSecond = rate
                        case "burst": server.burst = try bounded(r.value, "server.rate-limit.burst", 1...1_000_000)
                        default:
                            throw r.keyNode.error(
                                "unknown key '\(r.key)' in server.rate-limit (expected per-token, burst)")
                        }
                    }
                case "metrics":
                    let text = try e.value.string("server.metrics")
                    switch text {
                    case "public": server.metricsPublic = true
                    case "token": server.metricsPublic = false
                    default: throw e.value.error("server.metrics must be public or token, got \"\(text)\"")
                    }
                case "request-timeout":
                    server.requestTimeout = try positive(e.value, "server.request-timeout")
                case "header-timeout": server.headerTimeout = try positive(e.value, "server.header-timeout")
                case "idle-timeout": server.idleTimeout = try positive(e.value, "server.idle-timeout")
                case "keepalive": server.keepalive = try positive(e.value, "server.keepalive")
                case "relays": server.relays = e.value
                case "max-connections":
                    server.maxConnections = try bounded(e.value, "server.max-connections", 1...100_000)
                case "max-connections-per-client":
                    server.maxConnectionsPerClient = try bounded(
                        e.value, "server.max-connections-per-client", 1...100_000)
                case "max-streams-per-token":
                    server.maxStreamsPerToken = try bounded(e.value, "server.max-streams-per-token", 1...100_000)
                case "max-long-polls-per-token":
                    server.maxLongPollsPerToken = try bounded(e.value, "server.max-long-polls-per-token", 1...100_000)
                default:
                    throw e.keyNode.error(
                        "unknown key '\(e.key)' in server (expected listen, tls, max-body, tokens, rate-limit, metrics, "
                            + "request-timeout, header-timeout, idle-timeout, keepalive, max-connections, "
                            + "max-connections-per-client, max-streams-per-token, max-long-polls-per-token)")
                }
            }
            return server
        }

        func positive(_ node: ConfigNode, _ what: String) throws(ConfigError) -> Duration {
            let d = try node.duration(what)
            guard d > .zero, d <= .seconds(86_400) else {
                throw node.error("\(what) must be more than 0 and at most 1d")
            }
            return d
        }

        /// `50/s`, `600/m`, `3600/h`, or a bare number per second; nil when unreadable or not positive.
        static func parseRate(_ text: String) -> Double? {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let n = Double(parts[0].trimmingCharacters(in: .whitespaces)),
                n.isFinite, n > 0
            else { return nil }
            guard parts.count == 2 else { return n }
            switch parts[1].trimmingCharacters(in: .whitespaces) {
            case "s": return n
            case "m": return n / 60
            case "h": return n / 3600
            default: return nil
            }
        }

        func readTokens(_ node: ConfigNode) throws(ConfigError) -> [APIToken] {
            var tokens: [APIToken] = []
            var names: Set<String> = []
            for item in try node.sequence("server.tokens") {
                var name: String?
                var hash: String?
                var namespaces = ["default"]
                var scopes: Set<String>?
                for t in try item.mapping("a token") {
                    switch t.key {
                    case "name":
                        let n = try t.value.string("name")
                        try checkName(n, at: t.value, what: "token name")
                        guard names.insert(n).inserted else { throw t.value.error("token name '\(n)' is used twice") }
                        name = n
                    case "sha256":
                        let h = try t.value.string("sha256").lowercased()
                        guard
                            t.value.hasUnresolvedVariables
                                || (h.utf8.count == 64
                                    && h.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) })
                        else {
                            throw t.value.error(
                                "sha256 must be the 64 hex digits of the token's SHA-256 (herald tokens new prints it)")
                        }
                        hash = h
                    case "namespaces":
                        namespaces = try t.value.stringList("namespaces")
                        for ns in namespaces {
                            let stem = ns.hasSuffix("*") ? String(ns.dropLast()) : ns
                            guard !stem.contains("*"), ns == "*" || !stem.isEmpty else {
                                throw t.value.error("namespace '\(ns)': use an exact name or a prefix ending in *")
                            }
                        }
                    case "scopes":
                        let list = try t.value.stringList("scopes")
                        for s in list where !APIToken.knownScopes.contains(s) {
                            throw t.value.error(
                                "unknown scope '\(s)' (expected \(APIToken.knownScopes.sorted().joined(separator: ", ")))"
                            )
                        }
                        scopes = Set(list)
                    default:
                        throw t.keyNode.error(
                            "unknown key '\(t.key)' in a token (expected name, sha256, namespaces, scopes)")
                    }
                }
                guard let name else { throw item.error("a token needs a name") }
                guard let hash else { throw item.error("token \(name) needs sha256") }
                guard let scopes else {
                    throw item.error("token \(name) needs scopes (send, devices, events, read, metrics, relay)")
                }
                tokens.append(APIToken(name: name, sha256: hash, namespaces: namespaces, scopes: scopes))
            }
            return tokens
        }

        /// An integer in `range`, or an error naming the key and the range.
        func bounded(_ node: ConfigNode, _ what: String, _ range: ClosedRange<Int>) throws(ConfigError) -> Int {
            let v = try node.int(what)
            guard range.contains(v) else {
                throw node.error("\(what) must be in \(range.lowerBound)...\(range.upperBound), got \(v)")
            }
            return v
        }

        func readChannels(_ node: ConfigNode) throws(ConfigError) -> [ChannelSpec] {
            var out: [ChannelSpec] = []
            for e in try node.mapping("channels") {
                try checkName(e.key, at: e.keyNode, what: "channel name")
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
            var policy = RetryPolicy.default
            for e in try node.mapping("retry") {
                switch e.key {
                case "attempts":
                    let a = try e.value.int("retry.attempts")
                    guard (1...100).contains(a) else { throw e.value.error("retry.attempts must be in 1...100") }
                    policy.maxAttempts = a
                case "initial":
                    policy.initialDelay = try e.value.duration("retry.initial")
                case "max":
                    policy.maxDelay = try e.value.duration("retry.max")
                default:
                    throw e.keyNode.error("unknown key '\(e.key)' in retry (expected attempts, initial, max)")
                }
            }
            guard policy.initialDelay <= policy.maxDelay else {
                throw node.error("retry.initial must not exceed retry.max")
            }
            return policy
        }

        func readRoutes(_ node: ConfigNode, channels: [ChannelSpec]) throws(ConfigError) -> RouteTable {
            let names = Set(channels.map(\.name))
            var table = RouteTable(defaultRoute: [], namespaces: [:])
            var sawDefault = false
            for e in try node.mapping("routes") {
                switch e.key {
                case "default":
                    table.defaultRoute = try readSteps(e.value, route: "default", names: names)
                    sawDefault = true
                case "namespaces":
                    for ns in try e.value.mapping("routes.namespaces") {
                        try checkName(ns.key, at: ns.keyNode, what: "namespace")
                        table.namespaces[ns.key] = try readSteps(ns.value, route: "namespaces.\(ns.key)", names: names)
                    }
                default:
                    throw e.keyNode.error("unknown key '\(e.key)' in routes (expected default, namespaces)")
                }
            }
            if !sawDefault { throw node.error("routes: missing required key 'default'") }
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
            var step = RouteStep(deliver: [], mark: node.mark)
            var sawDeliver = false
            for e in try node.mapping("route step") {
                switch e.key {
                case "deliver":
                    let items = e.value.tree.scalar != nil ? [e.value] : try e.value.sequence("deliver")
                    guard !items.isEmpty else { throw e.value.error("deliver must name at least one channel") }
                    for item in items {
                        let n = try item.string("deliver")
                        guard names.contains(n) else {
                            throw item.error(
                                "unknown channel '\(n)' (defined: \(names.sorted().joined(separator: ", ")))")
                        }
                        guard !step.deliver.contains(n) else { throw item.error("channel '\(n)' is listed twice") }
                        step.deliver.append(n)
                    }
                    sawDeliver = true
                case "mode":
                    let m = try e.value.string("mode")
                    guard let mode = RouteStep.Mode(rawValue: m) else {
                        throw e.value.error("mode must be all or first, got \"\(m)\"")
                    }
                    step.mode = mode
                case "when":
                    for w in try e.value.mapping("when") {
                        switch w.key {
                        case "type": step.whenTypes = try w.value.stringList("when.type")
                        case "severity":
                            var sev: [Severity] = []
                            let list = w.value.tree.scalar != nil ? [w.value] : try w.value.sequence("when.severity")
                            for s in list {
                                let text = try s.string("when.severity")
                                guard let v = Severity(rawValue: text) else {
                                    throw s.error("unknown severity '\(text)' (expected info, success, warning, error)")
                                }
                                sev.append(v)
                            }
                            step.whenSeverities = sev
                        default: throw w.keyNode.error("unknown key '\(w.key)' in when (expected type, severity)")
                        }
                    }
                case "unless-delivered":
                    if let s = e.value.tree.scalar, s == "any" {
                        step.unlessDelivered = .any
                    } else {
                        var list: [String] = []
                        for item in try e.value.sequence("unless-delivered") {
                            let n = try item.string("unless-delivered")
                            guard names.contains(n) else {
                                throw item.error("unknown channel '\(n)' in unless-delivered")
                            }
                            if !earlier.contains(n) {
                                throw item.error(
                                    "unless-delivered names '\(n)', which no earlier step of this route delivers to")
                            }
                            list.append(n)
                        }
                        step.unlessDelivered = .channels(list)
                    }
                case "unless-registered":
                    for item in try e.value.sequence("unless-registered") {
                        let n = try item.string("unless-registered")
                        guard names.contains(n) else { throw item.error("unknown channel '\(n)' in unless-registered") }
                        step.unlessRegistered.append(n)
                    }
                case "timeout":
                    step.timeout = try e.value.duration("timeout")
                case "cooldown":
                    step.cooldown = try e.value.duration("cooldown")
                default:
                    throw e.keyNode.error(
                        "unknown key '\(e.key)' in route step (expected deliver, mode, when, unless-delivered, unless-registered, timeout, cooldown)"
                    )
                }
            }
            guard sawDeliver else { throw node.error("route step: missing required key 'deliver'") }
            return step
        }

        func checkName(_ name: String, at node: ConfigNode, what: String) throws(ConfigError) {
            guard !name.isEmpty, name.count <= 64,
                name.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" || $0 == "." })
            else { throw node.error("invalid \(what) '\(name)' (letters, digits, '.', '-', '_')") }
        }
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
