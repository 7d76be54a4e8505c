import ChannelAPI
import HeraldHTTP
import Router
import RouterTesting
import Testing

/// Every config error names file, line and column.
@Suite struct ConfigErrorTests {
    static let registry: ChannelRegistry = {
        var r = ChannelRegistry(RecordingChannel().factory(type: "rec", platforms: ["ios"]))
        try? r.register(
            ChannelFactory(type: "strict", defaultPlatforms: []) { config, _ throws(ConfigError) in
                _ = try config.requiredString("url")
                _ = try config.int("port", in: 1...65535)
                return RecordingChannel()
            })
        return r
    }()

    struct Case: Sendable, CustomStringConvertible {
        let name: String
        let yaml: String
        let line: Int
        let column: Int
        let message: String
        var description: String { name }
    }

    static let ok = "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n"

    static let cases: [Case] = [
        Case(
            name: "unknown top-level key", yaml: "version: 1\nchanels: {}\n", line: 2, column: 1,
            message: "unknown key 'chanels'"),
        Case(
            name: "missing version", yaml: "channels: {}\nroutes: {default: []}\n", line: 1, column: 1,
            message: "missing required key 'version'"),
        Case(
            name: "bad version", yaml: "version: 2\nchannels: {}\nroutes: {default: []}\n", line: 1, column: 10,
            message: "unsupported version 2"),
        Case(
            name: "unknown channel type",
            yaml: "version: 1\nchannels:\n  a:\n    type: carrier-pigeon\nroutes: {default: []}\n",
            line: 4, column: 11, message: "unknown channel type 'carrier-pigeon'"),
        Case(
            name: "unknown channel in route",
            yaml: "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a, b]\n", line: 6,
            column: 20, message: "unknown channel 'b'"),
        Case(
            name: "bad duration",
            yaml:
                "version: 1\nchannels:\n  a:\n    type: rec\n    timeout: soon\nroutes:\n  default:\n    - deliver: [a]\n",
            line: 5, column: 14, message: "timeout must be a duration"),
        Case(
            name: "bad mode",
            yaml:
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n      mode: some\n",
            line: 7, column: 13, message: "mode must be all or first"),
        Case(
            name: "unknown step key",
            yaml:
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n      unles-delivered: any\n",
            line: 7, column: 7, message: "unknown key 'unles-delivered' in route step"),
        Case(
            name: "step without deliver",
            yaml: "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - mode: first\n",
            line: 6, column: 7, message: "missing required key 'deliver'"),
        Case(
            name: "unknown key in channel (factory)",
            yaml:
                "version: 1\nchannels:\n  s:\n    type: strict\n    url: https://x\n    colour: red\nroutes:\n  default:\n    - deliver: [s]\n",
            line: 6, column: 5, message: "unknown key 'colour' in channel s"),
        Case(
            name: "missing required key (factory)",
            yaml: "version: 1\nchannels:\n  s:\n    type: strict\nroutes:\n  default:\n    - deliver: [s]\n", line: 4,
            column: 5,
            message: "missing required key 'url'"),
        Case(
            name: "mistyped value (factory)",
            yaml:
                "version: 1\nchannels:\n  s:\n    type: strict\n    url: https://x\n    port: eighty\nroutes:\n  default:\n    - deliver: [s]\n",
            line: 6, column: 11, message: "port must be an integer"),
        Case(
            name: "unset environment variable",
            yaml:
                "version: 1\nchannels:\n  s:\n    type: strict\n    url: ${HERALD_TEST_UNSET_VAR}\nroutes:\n  default:\n    - deliver: [s]\n",
            line: 5, column: 10, message: "environment variable HERALD_TEST_UNSET_VAR is not set"),
        Case(
            name: "duplicate key", yaml: "version: 1\nversion: 1\n", line: 2, column: 1, message: "duplicate"),
        Case(
            name: "yaml syntax", yaml: "version: 1\nchannels: [unclosed\n", line: 3, column: 1,
            message: "did not find expected"),
        Case(
            name: "unless-delivered not earlier",
            yaml:
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n      unless-delivered: [a]\n",
            line: 7, column: 26, message: "no earlier step"),
        Case(
            name: "bad severity",
            yaml:
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n      when: { severity: [loud] }\n",
            line: 7, column: 26, message: "unknown severity 'loud'"),
        Case(
            name: "retry attempts out of range",
            yaml:
                "version: 1\nchannels:\n  a:\n    type: rec\n    retry: { attempts: 0 }\nroutes:\n  default:\n    - deliver: [a]\n",
            line: 5, column: 24, message: "retry.attempts must be in 1...100"),
        Case(
            name: "http event loops out of range",
            yaml: "version: 1\nhttp:\n  event-loops: 0\n" + ok.dropFirst("version: 1\n".count),
            line: 3, column: 16, message: "http.event-loops must be in 1...16, got 0"),
        Case(
            name: "http connections not a number",
            yaml: "version: 1\nhttp: { connections-per-host: many }\n" + ok.dropFirst("version: 1\n".count),
            line: 2, column: 31, message: "http.connections-per-host must be an integer"),
        Case(
            name: "unknown http key",
            yaml: "version: 1\nhttp:\n  loops: 2\n" + ok.dropFirst("version: 1\n".count),
            line: 3, column: 3, message: "unknown key 'loops' in http (expected event-loops, connections-per-host)"),
        Case(
            name: "unknown store key",
            yaml: "version: 1\nstore:\n  pth: x.db\n" + ok.dropFirst("version: 1\n".count),
            line: 3, column: 3,
            message: "unknown key 'pth' in store (expected path, url, lease, cache, prepared-statements)"),
        Case(
            name: "unknown tls key",
            yaml: "version: 1\ntls: { ca: x }\n" + ok.dropFirst("version: 1\n".count),
            line: 2, column: 8,
            message: "unknown key 'ca' in tls (expected ca-file)"),
        Case(
            name: "unknown history key",
            yaml: "version: 1\nhistory:\n  keep: 1d\n" + ok.dropFirst("version: 1\n".count),
            line: 3, column: 3,
            message: "unknown key 'keep' in history (expected retention)"),
        Case(
            name: "unknown log key",
            yaml: "version: 1\nlog:\n  lvl: info\n" + ok.dropFirst("version: 1\n".count),
            line: 3, column: 3,
            message: "unknown key 'lvl' in log (expected level)"),
        Case(
            name: "log level",
            yaml: "version: 1\nlog:\n  level: loud\n" + ok.dropFirst("version: 1\n".count),
            line: 3, column: 10,
            message: "log.level must be one of debug, info, warning, error"),
        Case(
            name: "unknown retry key",
            yaml:
                "version: 1\nchannels:\n  a:\n    type: rec\n    retry: { tries: 2 }\nroutes:\n  default:\n    - deliver: [a]\n",
            line: 5, column: 14,
            message: "unknown key 'tries' in retry (expected attempts, initial, max)"),
        Case(
            name: "unknown when key",
            yaml:
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n      when: { kind: x }\n",
            line: 7, column: 15,
            message: "unknown key 'kind' in when (expected type, severity)"),
        Case(
            name: "unknown routes key",
            yaml:
                "version: 1\nchannels:\n  a: { type: rec }\nroutes:\n  fallback: []\n  default:\n    - deliver: [a]\n",
            line: 5, column: 3,
            message: "unknown key 'fallback' in routes (expected default, namespaces)"),
        Case(
            name: "unknown top-level key lists the keys",
            yaml: "version: 1\nchanels: {}\n" + ok.dropFirst("version: 1\n".count),
            line: 2, column: 1,
            message:
                "unknown key 'chanels' in the config (expected channels, history, http, log, routes, server, store, tls, version)"
        ),
        Case(
            name: "server is a mapping",
            yaml: "version: 1\nserver: 8686\n" + ok.dropFirst("version: 1\n".count),
            line: 2, column: 9,
            message: "server must be a mapping, not a scalar"),
        // The server: section's own errors: ServerTests/ServerConfigTests (HeraldServer reads it).
    ]

    static func load(_ yaml: String) throws -> HeraldConfig {
        let config = try ConfigLoader.parse(yaml, file: "broken.yaml", environment: [:], registry: registry)
        // Channel factories validate their own keys when the graph is built.
        for spec in config.channels {
            let cc = try ChannelConfig(name: spec.name, node: spec.node, ignoring: ConfigLoader.commonChannelKeys)
            _ = try registry.factory(for: spec.type)?.make(cc, ChannelContextFactory.context(spec.name))
            try cc.finish()
        }
        return config
    }

    @Test(arguments: cases) func errorCarriesPosition(_ c: Case) throws {
        do {
            _ = try Self.load(c.yaml)
            Issue.record("expected an error for \(c.name)")
        } catch let e as ConfigError {
            #expect(e.file == "broken.yaml")
            #expect(e.mark?.line == c.line, "\(c.name): \(e)")
            #expect(e.mark?.column == c.column, "\(c.name): \(e)")
            #expect(e.message.contains(c.message), "\(c.name): \(e)")
            #expect(e.description.hasPrefix("broken.yaml:\(c.line):\(c.column): "))
        }
    }

    @Test func validConfigLoads() throws {
        let config = try Self.load(Self.ok)
        #expect(config.channels.map(\.name) == ["a"])
        #expect(config.warnings.isEmpty)
    }

    @Test func httpSettingsOverrideTheEmbeddersOnlyWhereSet() throws {
        #expect(try Self.load(Self.ok).http == HTTPSettings())
        let config = try Self.load(
            "version: 1\nhttp:\n  event-loops: 2\n  connections-per-host: 8\n" + Self.ok.dropFirst("version: 1\n".count)
        )
        #expect(config.http == HTTPSettings(eventLoops: 2, connectionsPerHost: 8))
        let base = HTTPClientConfiguration(caFile: "/x.pem", maxConcurrentStreams: 50, eventLoops: 1)
        let applied = config.http.applied(to: base)
        #expect(applied.eventLoops == 2)
        #expect(applied.maxConnectionsPerHost == 8)
        #expect(applied.maxConcurrentStreams == 50)
        #expect(applied.caFile == "/x.pem")
        let partial = HTTPSettings(connectionsPerHost: 2).applied(to: base)
        #expect(partial.eventLoops == 1)
        #expect(partial.maxConnectionsPerHost == 2)
    }

    @Test func unroutedChannelIsAWarning() throws {
        let config = try Self.load(
            "version: 1\nchannels:\n  a: { type: rec }\n  b: { type: rec }\nroutes:\n  default:\n    - deliver: [a]\n")
        #expect(config.warnings.count == 1)
        #expect(
            config.warnings[0].description
                == "broken.yaml:4:3: warning: channel 'b' is defined but no route delivers to it")
    }

    @Test func environmentExpansionAndDefaults() throws {
        let yaml =
            "version: 1\nstore:\n  path: ${DB:-~/h.db}\nchannels:\n  a:\n    type: rec\n    timeout: ${T}\nroutes:\n  default:\n    - deliver: [a]\n"
        let config = try ConfigLoader.parse(
            yaml, environment: ["T": "1500ms", "HOME": "/home/op"], registry: Self.registry)
        #expect(config.storePath == "/home/op/h.db")
        #expect(config.channels[0].timeout == .milliseconds(1500))
    }

    @Test func durations() {
        #expect(ConfigNode.parseDuration("500ms") == .milliseconds(500))
        #expect(ConfigNode.parseDuration("10s") == .seconds(10))
        #expect(ConfigNode.parseDuration("5m") == .seconds(300))
        #expect(ConfigNode.parseDuration("1h") == .seconds(3600))
        #expect(ConfigNode.parseDuration("2") == .seconds(2))
        #expect(ConfigNode.parseDuration("-1s") == nil)
        #expect(ConfigNode.parseDuration("1 fortnight") == nil)
    }
}

enum ChannelContextFactory {
    static func context(_ name: String) throws -> ChannelContext {
        ChannelContext(
            name: name, http: try HTTPClientHolder.shared, clock: ManualClock(), random: FixedRandom(),
            logger: ChannelLogger(source: name, sink: RecordingLogSink()), state: InMemoryChannelState())
    }
}
