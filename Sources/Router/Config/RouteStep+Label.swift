import ChannelAPI

extension RouteTable {
    /// The routes in `herald graph`'s order: `default`, then `ns:NAME` by namespace name.
    public var inGraphOrder: [(name: String, steps: [RouteStep])] {
        [("default", defaultRoute)] + namespaces.sorted { $0.key < $1.key }.map { ("ns:" + $0.key, $0.value) }
    }
}

extension RouteStep {
    /// The step's label lines as `herald graph` and the console show them: `step N`, then each rule.
    public func labelLines(index: Int) -> [String] {
        var parts = ["step \(index + 1)"]
        if mode == .first { parts.append("mode first") }
        if let t = whenTypes { parts.append("type: " + t.joined(separator: "|")) }
        if let s = whenSeverities { parts.append("severity: " + s.map(\.rawValue).joined(separator: "|")) }
        if let u = unlessDelivered {
            switch u {
            case .any: parts.append("unless delivered: any")
            case .channels(let c): parts.append("unless delivered: " + c.joined(separator: ","))
            }
        }
        if !unlessRegistered.isEmpty { parts.append("unless registered: " + unlessRegistered.joined(separator: ",")) }
        if let c = cooldown { parts.append("cooldown \(c.milliseconds)ms") }
        return parts
    }
}
