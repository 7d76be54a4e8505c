import ChannelAPI
import Router

/// The channel graph of `herald graph` as JSON for the console: the same nodes (each channel with
/// its type, each route, each step with its rule) and edges (route → step 1 → step 2 …, step →
/// each channel it delivers to), with the step labels `herald graph --format dot` prints.
public enum RouteGraph {
    /// The graph: every channel, and the default route plus the namespace routes `covers` accepts.
    public static func json(_ config: HeraldConfig, covering covers: (String) -> Bool) -> JSONValue {
        .object([
            "channels": .array(
                config.channels.map {
                    .object(["name": .string($0.name), "type": .string($0.type), "enabled": .bool($0.enabled)])
                }),
            "routes": .array(
                config.routes.inGraphOrder.filter { $0.name == "default" || covers(String($0.name.dropFirst(3))) }.map {
                    route in
                    .object([
                        "name": .string(route.name),
                        "steps": .array(
                            route.steps.enumerated().map { i, step in
                                .object([
                                    "label": .array(step.labelLines(index: i).map { .string($0) }),
                                    "deliver": .array(step.deliver.map { .string($0) }),
                                    "mode": .string(step.mode.rawValue),
                                ])
                            }),
                    ])
                }),
        ])
    }
}
