import ChannelAPI
import Router

/// The channel graph of `herald graph` as JSON for the console: the same nodes (each channel with
/// its type, each route, each step with its rule) and edges (route → step 1 → step 2 …, step →
/// each channel it delivers to), with the step labels `herald graph --format dot` prints.
public enum RouteGraph {
    /// The routes in `herald graph`'s order: `default`, then `ns:NAME` by name.
    public static func routes(_ config: HeraldConfig) -> [(name: String, steps: [RouteStep])] {
        [("default", config.routes.defaultRoute)]
            + config.routes.namespaces.sorted { $0.key < $1.key }.map { ("ns:" + $0.key, $0.value) }
    }

    /// A step's label lines, as `herald graph` prints them (`step N`, then each rule).
    public static func label(_ step: RouteStep, index: Int) -> [String] {
        var parts = ["step \(index + 1)"]
        if step.mode == .first { parts.append("mode first") }
        if let t = step.whenTypes { parts.append("type: " + t.joined(separator: "|")) }
        if let s = step.whenSeverities { parts.append("severity: " + s.map(\.rawValue).joined(separator: "|")) }
        if let u = step.unlessDelivered {
            switch u {
            case .any: parts.append("unless delivered: any")
            case .channels(let c): parts.append("unless delivered: " + c.joined(separator: ","))
            }
        }
        if !step.unlessRegistered.isEmpty {
            parts.append("unless registered: " + step.unlessRegistered.joined(separator: ","))
        }
        if let c = step.cooldown { parts.append("cooldown \(c.milliseconds)ms") }
        return parts
    }

    /// The graph: every channel, and the default route plus the namespace routes `covers` accepts.
    public static func json(_ config: HeraldConfig, covering covers: (String) -> Bool) -> JSONValue {
        .object([
            "channels": .array(
                config.channels.map {
                    .object(["name": .string($0.name), "type": .string($0.type), "enabled": .bool($0.enabled)])
                }),
            "routes": .array(
                routes(config).filter { $0.name == "default" || covers(String($0.name.dropFirst(3))) }.map { route in
                    .object([
                        "name": .string(route.name),
                        "steps": .array(
                            route.steps.enumerated().map { i, step in
                                .object([
                                    "label": .array(label(step, index: i).map { .string($0) }),
                                    "deliver": .array(step.deliver.map { .string($0) }),
                                    "mode": .string(step.mode.rawValue),
                                ])
                            }),
                    ])
                }),
        ])
    }
}
