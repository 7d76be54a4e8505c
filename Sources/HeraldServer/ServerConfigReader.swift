import ChannelAPI
import Foundation
import Router

/// Reads the `server:` section (http-api.md §1) that the router keeps as a node
/// (``Router/HeraldConfig/serverNode``): every error names its file, line and column.
enum ServerConfigReader {
    /// The keys of `server:`, in the order the "expected" list names them.
    static let keys = [
        "listen", "tls", "max-body", "tokens", "rate-limit", "metrics", "request-timeout", "header-timeout",
        "idle-timeout", "keepalive", "max-connections", "max-connections-per-client", "max-streams-per-token",
        "max-long-polls-per-token", "relays",
    ]

    /// The section's values over the defaults of ``ServerConfig/init()``.
    static func read(_ node: ConfigNode) throws(ConfigError) -> ServerConfig {
        let section = try ConfigMapping(node, "server", keys: keys)
        var server = ServerConfig()
        if let n = section["listen"] {
            let text = try n.string("server.listen")
            guard let (host, port) = ServerConfig.parseListen(text) else {
                throw n.error(
                    "server.listen must be host:port with a numeric address (127.0.0.1:8686, [::1]:8686, "
                        + "0.0.0.0:8686), got \"\(text)\"")
            }
            server.host = host
            server.port = port
            server.listenMark = n.mark
        }
        if let n = section["tls"] { server.tls = try readTLS(n) }
        if let n = section["max-body"] {
            let text = try n.string("server.max-body")
            // At most 1 MiB: no request of the API needs more (a notification's fields are capped far
            // below it), and each connection may hold one body of this size.
            guard let size = ServerConfig.parseSize(text), (1...ServerConfig.maxBodyCeiling).contains(size) else {
                throw n.error(
                    "server.max-body must be a size from 1B to 1MiB (65536, 512B, 64KiB, 1MiB), got \"\(text)\"")
            }
            server.maxBody = size
        }
        if let n = section["tokens"] { server.tokens = try readTokens(n) }
        if let n = section["rate-limit"] {
            let rate = try ConfigMapping(n, "server.rate-limit", keys: ["per-token", "burst"])
            if let p = rate["per-token"] {
                let text = try p.string("server.rate-limit.per-token")
                guard let perSecond = parseRate(text) else {
                    throw p.error("server.rate-limit.per-token must be a rate like 50/s or 600/m, got \"\(text)\"")
                }
                server.ratePerSecond = perSecond
            }
            server.burst = try rate.int("burst", in: 1...1_000_000) ?? server.burst
        }
        if let n = section["metrics"] {
            let text = try n.string("server.metrics")
            switch text {
            case "public": server.metricsPublic = true
            case "token": server.metricsPublic = false
            default: throw n.error("server.metrics must be public or token, got \"\(text)\"")
            }
        }
        server.requestTimeout = try positive(section, "request-timeout") ?? server.requestTimeout
        server.headerTimeout = try positive(section, "header-timeout") ?? server.headerTimeout
        server.idleTimeout = try positive(section, "idle-timeout") ?? server.idleTimeout
        server.keepalive = try positive(section, "keepalive") ?? server.keepalive
        let limit = 1...100_000
        server.maxConnections = try section.int("max-connections", in: limit) ?? server.maxConnections
        server.maxConnectionsPerClient =
            try section.int("max-connections-per-client", in: limit) ?? server.maxConnectionsPerClient
        server.maxStreamsPerToken = try section.int("max-streams-per-token", in: limit) ?? server.maxStreamsPerToken
        server.maxLongPollsPerToken =
            try section.int("max-long-polls-per-token", in: limit) ?? server.maxLongPollsPerToken
        if let n = section["relays"], !n.isNull {
            server.relays = n
            // Checked with the rest of the config (validate, start, reload): protocols, keys, access, routes.
            _ = try RelayHub(server: server)
        }
        return server
    }

    /// `server.tls`: both files, each readable (unless offline).
    static func readTLS(_ node: ConfigNode) throws(ConfigError) -> TLSFiles {
        let tls = try ConfigMapping(node, "server.tls", keys: ["cert", "key"])
        var files: [String: String] = [:]
        // In file order, as written: the first unreadable file is the error.
        for key in tls.written {
            guard let n = tls[key] else { continue }
            let p = try n.path(tls.name(key))
            if !n.offline, !FileManager.default.isReadableFile(atPath: p) {
                throw n.error("server.tls.\(key) \(p) cannot be read")
            }
            files[key] = p
        }
        guard let cert = files["cert"], let key = files["key"] else {
            throw node.error("server.tls needs both cert and key")
        }
        return TLSFiles(certificate: cert, key: key)
    }

    /// A duration more than zero and at most a day, when present.
    static func positive(_ section: ConfigMapping, _ key: String) throws(ConfigError) -> Duration? {
        guard let n = section[key] else { return nil }
        let d = try n.duration(section.name(key))
        guard d > .zero, d <= .seconds(86_400) else {
            throw n.error("\(section.name(key)) must be more than 0 and at most 1d")
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

    /// `server.tokens`: a list of named tokens, each with its hash, namespaces and scopes.
    static func readTokens(_ node: ConfigNode) throws(ConfigError) -> [APIToken] {
        var tokens: [APIToken] = []
        var names: Set<String> = []
        for item in try node.sequence("server.tokens") {
            let t = try ConfigMapping(
                item, "a token", keys: ["name", "sha256", "namespaces", "scopes"], qualified: false)
            var name: String?
            if let n = t["name"] {
                let text = try n.string("name")
                try ConfigLoader.checkName(text, at: n, what: "token name")
                guard names.insert(text).inserted else { throw n.error("token name '\(text)' is used twice") }
                name = text
            }
            var hash: String?
            if let n = t["sha256"] {
                let h = try n.string("sha256").lowercased()
                guard
                    n.hasUnresolvedVariables
                        || (h.utf8.count == 64
                            && h.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) })
                else {
                    throw n.error(
                        "sha256 must be the 64 hex digits of the token's SHA-256 (herald tokens new prints it)")
                }
                hash = h
            }
            var namespaces = ["default"]
            if let n = t["namespaces"] {
                namespaces = try n.stringList("namespaces")
                for ns in namespaces {
                    let stem = ns.hasSuffix("*") ? String(ns.dropLast()) : ns
                    guard !stem.contains("*"), ns == "*" || !stem.isEmpty else {
                        throw n.error("namespace '\(ns)': use an exact name or a prefix ending in *")
                    }
                }
            }
            var scopes: Set<String>?
            if let n = t["scopes"] {
                let list = try n.stringList("scopes")
                for s in list where !APIToken.knownScopes.contains(s) {
                    throw n.error(
                        "unknown scope '\(s)' (expected \(APIToken.knownScopes.sorted().joined(separator: ", ")))")
                }
                scopes = Set(list)
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
}

extension ServerConfig {
    /// The `server:` section of `config`: its values over the defaults (the defaults alone when the
    /// config has none).
    /// - Throws: ``ChannelAPI/ConfigError`` at the key or value that is wrong.
    public init(_ config: HeraldConfig) throws(ConfigError) {
        self = try config.serverNode.map { n throws(ConfigError) in try ServerConfigReader.read(n) } ?? ServerConfig()
    }
}
