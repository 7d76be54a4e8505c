import ChannelAPI

/// Which channels will serve a device: the enabled channels that its namespace's route delivers to
/// and that serve its platform. Pure data, computed from the config alone.
///
/// A device that no such channel serves is still registered (after the generic checks); its
/// ``unreachableReason`` says why nothing will be delivered to it, and `devices list`, `explain`
/// and ``RegistrationResult/warnings`` show it.
public struct DeviceReach: Sendable, Equatable {
    /// The route judged: `default` or `namespaces.<ns>`.
    public var route: String
    /// Enabled channels of the route that serve the device's platform, in route order.
    public var channels: [String]
    /// Why no channel serves the device; nil when ``channels`` is not empty.
    public var unreachableReason: String?

    /// Whether at least one channel will serve the device.
    public var isReachable: Bool { !channels.isEmpty }
}

extension Planner {
    /// The channels that will serve `device` under `config` (see ``DeviceReach``).
    /// - Parameters:
    ///   - device: A device (only its namespace and platform are read).
    ///   - config: The config in force.
    /// - Returns: The serving channels, or the reason there are none.
    public static func reach(of device: Device, config: HeraldConfig) -> DeviceReach {
        let (routeName, steps) = config.routes.route(for: device.namespace)
        var routed: [String] = []
        for step in steps { for name in step.deliver where !routed.contains(name) { routed.append(name) } }
        let serving = routed.compactMap(config.channel).filter { !$0.isSink && $0.platforms.contains(device.platform) }
        let enabled = serving.filter(\.enabled).map(\.name)
        guard enabled.isEmpty else { return DeviceReach(route: routeName, channels: enabled) }
        let platform = "platform '\(device.platform)'"
        let reason: String
        if !serving.isEmpty {
            reason =
                "the channels of route \(routeName) that serve \(platform) are disabled: "
                + serving.map(\.name).joined(separator: ", ")
        } else {
            let elsewhere = config.channels.filter { !$0.isSink && $0.platforms.contains(device.platform) }.map(\.name)
            if elsewhere.isEmpty {
                reason = "no channel in the config serves \(platform)"
            } else {
                reason =
                    "route \(routeName) delivers to no channel that serves \(platform) (it is served by "
                    + elsewhere.joined(separator: ", ") + ", which this route does not deliver to)"
            }
        }
        return DeviceReach(route: routeName, channels: [], unreachableReason: reason)
    }
}
