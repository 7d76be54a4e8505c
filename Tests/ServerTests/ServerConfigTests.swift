import ChannelAPI
import HeraldServer
import Router
import RouterTesting
import Testing

/// Issue 17: the `server:` section: values, defaults, and errors at their positions. The router keeps
/// the section as a node; HeraldServer's `ServerConfig(_:)` reads it (issue 31 §5).
@Suite struct ServerConfigTests {
    static let registry = ChannelRegistry(RecordingChannel().factory(type: "rec", platforms: ["ios"]))
    static let hash = String(repeating: "ab", count: 32)

    static func load(_ server: String, environment: [String: String] = [:]) throws(ConfigError) -> ServerConfig {
        let text =
            "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\nserver:\n" + server
        return try ServerConfig(ConfigLoader.parse(text, environment: environment, registry: registry))
    }

    @Test func defaultsAreLoopbackWithoutTokens() throws {
        let s = try ServerConfig(
            ConfigLoader.parse(
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n",
                registry: Self.registry))
        #expect(s.host == "127.0.0.1" && s.port == 8686 && s.isLoopback)
        #expect(s.maxBody == 65536 && s.tokens.isEmpty && s.metricsPublic)
        #expect(s.ratePerSecond == 50 && s.burst == 200)
        #expect(s.maxConnections == 1000 && s.maxConnectionsPerClient == 64 && s.headerTimeout == .seconds(10))
        #expect(s.maxStreamsPerToken == 32 && s.maxLongPollsPerToken == 32)
    }

    @Test func everyKeyIsRead() throws {
        let s = try Self.load(
            """
              listen: "[::1]:9000"
              max-body: 1MiB
              tokens:
                - name: hub
                  sha256: ${HUB_SHA}
                  namespaces: ["default", "team-*"]
                  scopes: [send, read]
              rate-limit: { per-token: 600/m, burst: 5 }
              metrics: token
              request-timeout: 2s
              idle-timeout: 3s
              keepalive: 500ms
              header-timeout: 4s
              max-connections: 200
              max-connections-per-client: 10
              max-streams-per-token: 5
              max-long-polls-per-token: 6
            """, environment: ["HUB_SHA": Self.hash.uppercased()])
        #expect(s.host == "::1" && s.port == 9000 && s.isLoopback)
        #expect(s.maxBody == 1 << 20)
        #expect(
            s.tokens == [
                APIToken(name: "hub", sha256: Self.hash, namespaces: ["default", "team-*"], scopes: ["send", "read"])
            ])
        #expect(s.ratePerSecond == 10 && s.burst == 5 && !s.metricsPublic)
        #expect(s.requestTimeout == .seconds(2) && s.idleTimeout == .seconds(3) && s.keepalive == .milliseconds(500))
        #expect(s.tokens[0].covers("team-a") && s.tokens[0].covers("default") && !s.tokens[0].covers("team"))
        #expect(s.tokens[0].exactNamespaces == nil)
        #expect(s.headerTimeout == .seconds(4) && s.maxConnections == 200 && s.maxConnectionsPerClient == 10)
        #expect(s.maxStreamsPerToken == 5 && s.maxLongPollsPerToken == 6)
    }

    struct Case: Sendable, CustomStringConvertible {
        let yaml: String
        let line: Int
        let column: Int
        let message: String
        var description: String { message }
    }

    static let cases: [Case] = [
        Case(yaml: "  listen: localhost", line: 8, column: 11, message: "server.listen must be host:port"),
        Case(yaml: "  listen: example.com:80", line: 8, column: 11, message: "numeric address"),
        Case(yaml: "  listen: 127.0.0.1:70000", line: 8, column: 11, message: "server.listen"),
        Case(yaml: "  max-body: 64KB", line: 8, column: 13, message: "server.max-body must be a size"),
        Case(yaml: "  max-body: 0", line: 8, column: 13, message: "server.max-body"),
        Case(yaml: "  max-body: 64MiB", line: 8, column: 13, message: "server.max-body must be a size from 1B to 1MiB"),
        Case(yaml: "  metrics: private", line: 8, column: 12, message: "server.metrics must be public or token"),
        Case(yaml: "  rate-limit: { per-token: fast }", line: 8, column: 28, message: "per-token must be a rate"),
        Case(yaml: "  rate-limit: { burst: 0 }", line: 8, column: 24, message: "server.rate-limit.burst must be in"),
        Case(yaml: "  tls: { cert: /nonexistent.pem, key: /x }", line: 8, column: 16, message: "cannot be read"),
        Case(yaml: "  listn: 127.0.0.1:1", line: 8, column: 3, message: "unknown key 'listn' in server"),
        Case(
            yaml: "  tokens:\n    - name: a\n      sha256: abc\n      scopes: [send]", line: 10, column: 15,
            message: "sha256 must be the 64 hex digits"),
        Case(
            yaml: "  tokens:\n    - name: a\n      sha256: \(hash)\n      scopes: [root]", line: 11, column: 15,
            message: "unknown scope 'root'"),
        Case(
            yaml: "  tokens:\n    - name: a\n      sha256: \(hash)", line: 9, column: 7, message: "token a needs scopes"
        ),
        Case(
            yaml: "  tokens:\n    - name: a\n      sha256: \(hash)\n      namespaces: [\"a*b\"]\n      scopes: [read]",
            line: 11, column: 19, message: "use an exact name or a prefix ending in *"),
        Case(
            yaml:
                "  tokens:\n    - { name: a, sha256: \(hash), scopes: [read] }\n    - { name: a, sha256: \(hash), scopes: [read] }",
            line: 10, column: 15, message: "token name 'a' is used twice"),
        Case(yaml: "  request-timeout: 0s", line: 8, column: 20, message: "must be more than 0"),
        Case(yaml: "  header-timeout: 0s", line: 8, column: 19, message: "server.header-timeout must be more than 0"),
        Case(yaml: "  header-timeout: soon", line: 8, column: 19, message: "server.header-timeout must be a duration"),
        Case(
            yaml: "  max-connections: 0", line: 8, column: 20,
            message: "server.max-connections must be in 1...100000, got 0"),
        Case(
            yaml: "  max-connections: lots", line: 8, column: 20, message: "server.max-connections must be an integer"),
        Case(
            yaml: "  max-connections-per-client: -1", line: 8, column: 31,
            message: "server.max-connections-per-client must be in 1...100000, got -1"),
        Case(
            yaml: "  max-streams-per-token: 0", line: 8, column: 26,
            message: "server.max-streams-per-token must be in 1...100000, got 0"),
        Case(
            yaml: "  max-long-polls-per-token: 1000001", line: 8, column: 29,
            message: "server.max-long-polls-per-token must be in 1...100000, got 1000001"),
        Case(
            yaml: "  max-conections: 5", line: 8, column: 3,
            message:
                "unknown key 'max-conections' in server (expected listen, tls, max-body, tokens, rate-limit, metrics, "
                + "request-timeout, header-timeout, idle-timeout, keepalive, max-connections, "
                + "max-connections-per-client, max-streams-per-token, max-long-polls-per-token, relays)"),
    ]

    @Test(arguments: cases) func errorsNameTheirPosition(_ c: Case) throws {
        do {
            _ = try Self.load(c.yaml)
            Issue.record("no error for \(c.yaml)")
        } catch {
            #expect(error.mark?.line == c.line, "\(error)")
            #expect(error.mark?.column == c.column, "\(error)")
            #expect(error.message.contains(c.message), "\(error)")
        }
    }

    /// The router checks only that `server:` is a mapping; everything under it is the server's.
    @Test func theRouterKeepsTheSectionAsANode() throws {
        let base = "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n"
        let config = try ConfigLoader.parse(base + "server:\n  listn: 1\n", registry: Self.registry)
        #expect(config.serverNode?.mark == ConfigMark(line: 8, column: 3))
        #expect(try ConfigLoader.parse(base + "server:\n", registry: Self.registry).serverNode == nil)
        do {
            _ = try ConfigLoader.parse(base + "server: [listen]\n", file: "s.yaml", registry: Self.registry)
            Issue.record("a server: list was accepted")
        } catch {
            #expect(error.description == "s.yaml:7:9: server must be a mapping, not a sequence")
        }
    }

    @Test func listenSizeAndLoopbackParsing() throws {
        #expect(try #require(ServerConfig.parseListen("127.0.0.1:8686")) == ("127.0.0.1", 8686))
        #expect(try #require(ServerConfig.parseListen("localhost:1")) == ("127.0.0.1", 1))
        #expect(try #require(ServerConfig.parseListen("[::]:80")) == ("::", 80))
        #expect(ServerConfig.parseListen("::1:80") == nil)
        #expect(ServerConfig.parseListen("1.2.3:80") == nil)
        #expect(ServerConfig.parseListen("1.2.3.4:") == nil)
        #expect(ServerConfig.parseListen("1.2.3.4:+80") == nil)
        #expect(ServerConfig.parseSize("64KiB") == 65536)
        #expect(ServerConfig.parseSize("512B") == 512)
        #expect(ServerConfig.parseSize("99999999999999999MiB") == nil)
        #expect(ServerConfig.parseSize("-1") == nil)
        #expect(ServerConfig.isLoopback("127.8.9.10") && ServerConfig.isLoopback("::1"))
        #expect(
            !ServerConfig.isLoopback("0.0.0.0") && !ServerConfig.isLoopback("::")
                && !ServerConfig.isLoopback("10.0.0.1"))
    }
}
