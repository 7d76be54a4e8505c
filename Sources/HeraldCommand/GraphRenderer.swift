import ChannelAPI
import Router

/// Renders the channel graph for `herald graph`.
enum GraphRenderer {
    static func routes(_ config: HeraldConfig) -> [(name: String, steps: [RouteStep])] { config.routes.inGraphOrder }

    static func label(_ step: RouteStep, index: Int) -> String {
        step.labelLines(index: index).joined(separator: "\\n")
    }

    static func id(_ s: String) -> String { s.map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined() }

    static func dot(_ config: HeraldConfig) -> String {
        var out = ["digraph herald {", "  rankdir=LR;", "  node [shape=box];"]
        for c in config.channels {
            out.append("  \"ch_\(id(c.name))\" [label=\"\(c.name)\\n(\(c.type))\"\(c.enabled ? "" : " style=dashed")];")
        }
        for (name, steps) in routes(config) {
            out.append("  \"r_\(id(name))\" [shape=ellipse label=\"\(name)\"];")
            var prev = "r_\(id(name))"
            for (i, s) in steps.enumerated() {
                let sid = "s_\(id(name))_\(i)"
                out.append("  \"\(sid)\" [shape=diamond label=\"\(label(s, index: i))\"];")
                out.append("  \"\(prev)\" -> \"\(sid)\";")
                for c in s.deliver { out.append("  \"\(sid)\" -> \"ch_\(id(c))\";") }
                prev = sid
            }
        }
        out.append("}")
        return out.joined(separator: "\n")
    }

    static func mermaid(_ config: HeraldConfig) -> String {
        var out = ["flowchart LR"]
        for c in config.channels { out.append("  ch_\(id(c.name))[\"\(c.name) (\(c.type))\"]") }
        for (name, steps) in routes(config) {
            out.append("  r_\(id(name))([\"\(name)\"])")
            var prev = "r_\(id(name))"
            for (i, s) in steps.enumerated() {
                let sid = "s_\(id(name))_\(i)"
                out.append("  \(sid){\"\(label(s, index: i).replacingOccurrences(of: "\\n", with: "<br/>"))\"}")
                out.append("  \(prev) --> \(sid)")
                for c in s.deliver { out.append("  \(sid) --> ch_\(id(c))") }
                prev = sid
            }
        }
        return out.joined(separator: "\n")
    }

    static func json(_ config: HeraldConfig) -> JSONValue {
        .object([
            "channels": .array(
                config.channels.map {
                    .object(["name": .string($0.name), "type": .string($0.type), "enabled": .bool($0.enabled)])
                }),
            "routes": .object(
                Dictionary(
                    uniqueKeysWithValues: routes(config).map { name, steps in
                        (
                            name,
                            JSONValue.array(
                                steps.map {
                                    .object([
                                        "deliver": .array($0.deliver.map { .string($0) }),
                                        "mode": .string($0.mode.rawValue),
                                    ])
                                })
                        )
                    })),
        ])
    }
}
