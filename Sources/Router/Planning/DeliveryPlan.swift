import ChannelAPI

/// What the router will do with one notification: pure data, printed by `herald explain` and
/// asserted on by tests. Conditions that depend on earlier results (`unless-delivered`,
/// `mode: first`) are carried as data and decided by the executor.
public struct DeliveryPlan: Sendable, Equatable {
    /// The notification's id.
    public var notificationId: String
    /// Its namespace.
    public var namespace: String
    /// Its type.
    public var type: String
    /// Its severity, if any.
    public var severity: Severity?
    /// The route used: `default` or `namespaces.<ns>`.
    public var route: String
    /// The steps, in order.
    public var steps: [PlannedStep]
    /// Devices of the namespace that no enabled channel of the route serves (see ``DeviceReach``).
    public var unreachableDevices: [UnreachableDevice] = []

    /// Outbox rows the plan creates, including steps suppressed at plan time.
    public var deliveryCountIncludingSuppressed: Int {
        steps.filter(\.applies).reduce(0) { n, s in
            n + s.channels.filter(\.enabled).reduce(0) { $0 + ($1.isSink ? 1 : $1.devices.count) }
        }
    }

    /// Every (channel, device) pair that will be attempted unless suppressed at run time.
    public var deliveryCount: Int {
        steps.filter { $0.applies && $0.suppression == nil }.reduce(0) { n, s in
            n + s.channels.filter(\.enabled).reduce(0) { $0 + ($1.isSink ? 1 : $1.devices.count) }
        }
    }
}

/// One step of a plan.
public struct PlannedStep: Sendable, Equatable {
    /// 0-based position in the route.
    public var index: Int
    /// `all` or `first`.
    public var mode: RouteStep.Mode
    /// False when the step's `when:` filter does not match; such a step delivers nothing.
    public var applies: Bool
    /// Why the step does not apply (`when: type …`).
    public var notApplicableReason: String?
    /// A suppression decided at plan time (`unless-registered: …`, `cooldown: …`); every delivery
    /// of the step is recorded as `suppressed` with this reason.
    public var suppression: String?
    /// The run-time condition, if any.
    public var unlessDelivered: RouteStep.UnlessDelivered?
    /// The step's time budget.
    public var timeout: Duration?
    /// The channels, in order.
    public var channels: [PlannedChannel]
}

/// A registered device that the plan cannot reach, and why.
public struct UnreachableDevice: Sendable, Equatable {
    /// The device id.
    public var deviceId: String
    /// Its platform.
    public var platform: String
    /// Why no channel serves it.
    public var reason: String
}

/// One channel of a step and the devices it would reach.
public struct PlannedChannel: Sendable, Equatable {
    /// Channel name.
    public var name: String
    /// Channel type.
    public var type: String
    /// False for `enabled: false`; a disabled channel delivers nothing.
    public var enabled: Bool
    /// Whether the channel is a sink (one delivery, no device).
    public var isSink: Bool
    /// The devices it serves in the namespace.
    public var devices: [Device]
}

extension DeliveryPlan {
    /// Stable JSON for `herald explain --format json` (device secrets are never included).
    public var json: JSONValue {
        var o = baseJSON
        if !unreachableDevices.isEmpty {
            o["unreachableDevices"] = .array(
                unreachableDevices.map {
                    .object([
                        "deviceId": .string($0.deviceId), "platform": .string($0.platform),
                        "reason": .string($0.reason),
                    ])
                })
        }
        return .object(o)
    }

    private var baseJSON: [String: JSONValue] {
        [
            "notificationId": .string(notificationId), "namespace": .string(namespace), "type": .string(type),
            "severity": severity.map { .string($0.rawValue) } ?? .null, "route": .string(route),
            "steps": .array(
                steps.map { s in
                    var o: [String: JSONValue] = [
                        "index": .number(Double(s.index)), "mode": .string(s.mode.rawValue),
                        "applies": .bool(s.applies),
                        "channels": .array(
                            s.channels.map { c in
                                .object([
                                    "name": .string(c.name), "type": .string(c.type), "enabled": .bool(c.enabled),
                                    "sink": .bool(c.isSink),
                                    "devices": .array(
                                        c.devices.map {
                                            .object([
                                                "deviceId": .string($0.deviceId), "platform": .string($0.platform),
                                            ])
                                        }),
                                ])
                            }),
                    ]
                    if let r = s.notApplicableReason { o["notApplicable"] = .string(r) }
                    if let r = s.suppression { o["suppressed"] = .string(r) }
                    if let u = s.unlessDelivered { o["unlessDelivered"] = u.json }
                    if let t = s.timeout { o["timeoutMs"] = .number(Double(t.milliseconds)) }
                    return .object(o)
                }),
        ]
    }

    /// Text for people (`herald explain`).
    public var text: String {
        var lines = [
            "notification \(notificationId) namespace=\(namespace) type=\(type)"
                + (severity.map { " severity=\($0.rawValue)" } ?? "") + " route=\(route)"
        ]
        for s in steps {
            var head = "step \(s.index + 1) (mode \(s.mode.rawValue))"
            if !s.applies { head += ": not applicable (\(s.notApplicableReason ?? "when"))" }
            if let r = s.suppression { head += ": suppressed (\(r))" }
            if let u = s.unlessDelivered { head += " unless-delivered: \(u.text)" }
            lines.append(head)
            for c in s.channels {
                if !c.enabled {
                    lines.append("  \(c.name) [\(c.type)]: disabled")
                } else if c.isSink {
                    lines.append("  \(c.name) [\(c.type)]: sink")
                } else if c.devices.isEmpty {
                    lines.append("  \(c.name) [\(c.type)]: no devices")
                } else {
                    let ds = c.devices.map { "\($0.deviceId) (\($0.platform))" }.joined(separator: ", ")
                    lines.append("  \(c.name) [\(c.type)]: \(c.devices.count) device(s): \(ds)")
                }
            }
        }
        if steps.isEmpty { lines.append("(the route has no steps)") }
        for d in unreachableDevices { lines.append("unreachable: \(d.deviceId) (\(d.platform)): \(d.reason)") }
        return lines.joined(separator: "\n")
    }
}

extension RouteStep.UnlessDelivered {
    var json: JSONValue {
        switch self {
        case .any: .string("any")
        case .channels(let c): .array(c.map { .string($0) })
        }
    }

    var text: String {
        switch self {
        case .any: "any"
        case .channels(let c): c.joined(separator: ", ")
        }
    }
}
