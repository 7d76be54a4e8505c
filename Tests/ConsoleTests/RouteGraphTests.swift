import ChannelAPI
import Foundation
import HeraldChannels
import HeraldConsole
import HeraldHTTPTesting
import Router
import Testing

/// The console draws the same graph as `herald graph`.
@Suite struct RouteGraphTests {
    static let config = """
        version: 1
        store: { path: ./herald.db }
        channels:
          audit: { type: log, path: ./audit.jsonl }
          backup.hook: { type: log, path: ./backup.jsonl }
          quiet: { type: log, path: ./quiet.jsonl, enabled: false }
        routes:
          default:
            - deliver: [audit]
            - deliver: [backup.hook, quiet]
              unless-delivered: [audit]
          namespaces:
            team-a:
              - deliver: [audit, backup.hook]
                mode: first
                when: { type: [door, alarm], severity: [error] }
                cooldown: 30s
              - deliver: [quiet]
                unless-delivered: any
            other:
              - deliver: [audit]
        """

    static func id(_ s: String) -> String { s.map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined() }

    /// The node and edge lines `herald graph --format dot` would print for this JSON.
    static func dotLines(_ graph: JSONValue) throws -> Set<String> {
        var lines = Set<String>()
        for c in try #require(graph.objectValue?["channels"]?.arrayValue) {
            let o = try #require(c.objectValue)
            let name = try #require(o["name"]?.stringValue)
            let type = try #require(o["type"]?.stringValue)
            let dashed = o["enabled"] == .bool(false) ? " style=dashed" : ""
            lines.insert("  \"ch_\(id(name))\" [label=\"\(name)\\n(\(type))\"\(dashed)];")
        }
        for r in try #require(graph.objectValue?["routes"]?.arrayValue) {
            let o = try #require(r.objectValue)
            let name = try #require(o["name"]?.stringValue)
            lines.insert("  \"r_\(id(name))\" [shape=ellipse label=\"\(name)\"];")
            var prev = "r_\(id(name))"
            for (i, step) in try #require(o["steps"]?.arrayValue).enumerated() {
                let s = try #require(step.objectValue)
                let label = try #require(s["label"]?.arrayValue).compactMap(\.stringValue).joined(separator: "\\n")
                let sid = "s_\(id(name))_\(i)"
                lines.insert("  \"\(sid)\" [shape=diamond label=\"\(label)\"];")
                lines.insert("  \"\(prev)\" -> \"\(sid)\";")
                for c in try #require(s["deliver"]?.arrayValue).compactMap(\.stringValue) {
                    lines.insert("  \"\(sid)\" -> \"ch_\(id(c))\";")
                }
                prev = sid
            }
        }
        return lines
    }

    @Test func sameGraphAsHeraldGraph() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-graph-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("herald.yaml").path
        try Self.config.write(toFile: path, atomically: true, encoding: .utf8)

        let cli = try Subprocess.run(executable: ServeFixture.binary, arguments: ["graph", "-c", path])
        #expect(cli.code == 0, "\(cli.stderr)")
        let printed = Set(
            cli.stdout.split(separator: "\n").map(String.init).filter { $0.contains("[") || $0.contains("->") }
                .filter { !$0.contains("node [") })

        let config = try ConfigLoader.load(path: path, registry: HeraldChannels.registry, offline: true)
        let graph = RouteGraph.json(config) { _ in true }
        #expect(try Self.dotLines(graph) == printed)
        #expect(printed.contains { $0.contains("unless delivered: audit") })
        #expect(printed.contains { $0.contains("mode first\\ntype: door|alarm\\nseverity: error") })
    }

    /// A token sees the default route and the namespace routes it covers, never the others.
    @Test func onlyCoveredNamespaceRoutes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-graph-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("herald.yaml").path
        try Self.config.write(toFile: path, atomically: true, encoding: .utf8)
        let config = try ConfigLoader.load(path: path, registry: HeraldChannels.registry, offline: true)
        let caller = ConsoleSummary.Caller(name: "t", scopes: ["read"], namespaces: ["team-*"])
        let graph = RouteGraph.json(config, covering: caller.covers)
        let names = graph.objectValue?["routes"]?.arrayValue?.compactMap { $0.objectValue?["name"]?.stringValue }
        #expect(names == ["default", "ns:team-a"])
    }
}
