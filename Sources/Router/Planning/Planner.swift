import ChannelAPI

/// Facts about the world the planner needs, gathered by the router from the store.
public struct PlanningFacts: Sendable {
    /// Every device registered in the notification's namespace.
    public var devices: [Device]
    /// Step indexes whose `cooldown:` window already saw this notification's tag.
    public var cooledDownSteps: Set<Int>

    /// Creates facts.
    public init(devices: [Device], cooledDownSteps: Set<Int> = []) {
        self.devices = devices
        self.cooledDownSteps = cooledDownSteps
    }
}

/// Turns (config × notification × facts) into a ``DeliveryPlan``. Pure: no I/O, no clock.
public enum Planner {
    /// Plans `notification` under `config`.
    public static func plan(_ notification: HeraldNotification, config: HeraldConfig, facts: PlanningFacts)
        -> DeliveryPlan
    {
        let (routeName, _) = config.routes.route(for: notification.namespace)
        let devices = facts.devices.filter { $0.namespace == notification.namespace }
        let planned = plannedSteps(
            notification, config: config, cooledDownSteps: facts.cooledDownSteps,
            hasDevice: { spec in devices.contains { spec.platforms.contains($0.platform) } },
            served: { spec in devices.filter { spec.platforms.contains($0.platform) } })
        var plan = DeliveryPlan(
            notificationId: notification.id, namespace: notification.namespace, type: notification.type,
            severity: notification.severity, route: routeName, steps: planned)
        // Reach depends only on (namespace, platform): judged once per platform, not per device.
        var reasons: [String: String] = [:]
        var reachable: Set<String> = []
        for d in devices where !reachable.contains(d.platform) {
            if reasons[d.platform] != nil { continue }
            if let why = reach(of: d, config: config).unreachableReason {
                reasons[d.platform] = why
            } else {
                reachable.insert(d.platform)
            }
        }
        if !reasons.isEmpty {
            plan.unreachableDevices = devices.compactMap { d in
                reasons[d.platform].map { UnreachableDevice(deviceId: d.deviceId, platform: d.platform, reason: $0) }
            }
        }
        return plan
    }

    /// The steps of the plan, with each channel's devices from `served`; `hasDevice` says whether any
    /// device of the namespace is on one of a channel's platforms (for `unless-registered`).
    static func plannedSteps(
        _ notification: HeraldNotification, config: HeraldConfig, cooledDownSteps: Set<Int>,
        hasDevice: (ChannelSpec) -> Bool, served: (ChannelSpec) -> [Device]
    ) -> [PlannedStep] {
        let (_, steps) = config.routes.route(for: notification.namespace)
        var planned: [PlannedStep] = []
        for (i, step) in steps.enumerated() {
            var applies = true
            var why: String?
            if let types = step.whenTypes, !types.contains(notification.type) {
                applies = false
                why = "when type is \(types.joined(separator: "|")), not \(notification.type)"
            } else if let sev = step.whenSeverities {
                if let s = notification.severity, sev.contains(s) {
                } else {
                    applies = false
                    why =
                        "when severity is \(sev.map(\.rawValue).joined(separator: "|")), not \(notification.severity?.rawValue ?? "unset")"
                }
            }
            var suppression: String?
            if applies, !step.unlessRegistered.isEmpty {
                let hits = step.unlessRegistered.filter { name in
                    guard let spec = config.channel(name), spec.enabled, !spec.isSink else { return false }
                    return hasDevice(spec)
                }
                if !hits.isEmpty { suppression = "unless-registered: \(hits.joined(separator: ", "))" }
            }
            if applies, suppression == nil, let cd = step.cooldown, cooledDownSteps.contains(i) {
                suppression = "cooldown: tag \(notification.collapseTag ?? "") seen within \(cd.milliseconds)ms"
            }
            let channels = step.deliver.compactMap { name -> PlannedChannel? in
                guard let spec = config.channel(name) else { return nil }
                return PlannedChannel(
                    name: name, type: spec.type, enabled: spec.enabled, isSink: spec.isSink,
                    devices: spec.isSink ? [] : served(spec))
            }
            planned.append(
                PlannedStep(
                    index: i, mode: step.mode, applies: applies, notApplicableReason: why, suppression: suppression,
                    unlessDelivered: step.unlessDelivered, timeout: step.timeout, channels: channels))
        }
        return planned
    }

    /// Whether ``outline(_:config:platformCounts:cooledDownSteps:)`` reads the device counts for
    /// `notification`: only an applicable step's `unless-registered` condition asks for them. When it
    /// does not, empty counts give the same outline, and a send skips counting the namespace's
    /// devices (a `GROUP BY` over all of them, per accepted batch in `herald serve`).
    public static func needsDeviceCounts(
        _ notification: HeraldNotification, config: HeraldConfig, cooledDownSteps: Set<Int> = []
    ) -> Bool {
        var asked = false
        _ = plannedSteps(
            notification, config: config, cooledDownSteps: cooledDownSteps,
            hasDevice: { _ in
                asked = true
                return false
            }, served: { _ in [] })
        return asked
    }

    /// The outbox of `notification` without its devices: the step rules and one ``OutboxGroup`` per
    /// (applicable step, enabled channel), from the namespace's device count per platform. The store
    /// expands the groups into rows (``HeraldStore/insertNotification(_:steps:groups:now:suppressed:)``):
    /// the same rows ``Router`` made from the full plan, without holding the devices. Pure.
    public static func outline(
        _ notification: HeraldNotification, config: HeraldConfig, platformCounts: [String: Int],
        cooledDownSteps: Set<Int> = []
    ) -> (steps: [StepRule], groups: [OutboxGroup]) {
        let planned = plannedSteps(
            notification, config: config, cooledDownSteps: cooledDownSteps,
            hasDevice: { spec in spec.platforms.contains { (platformCounts[$0] ?? 0) > 0 } }, served: { _ in [] })
        var rules: [StepRule] = []
        var groups: [OutboxGroup] = []
        for step in planned {
            rules.append(StepRule(mode: step.mode, unlessDelivered: step.unlessDelivered, timeout: step.timeout))
            guard step.applies else { continue }
            let state: DeliveryState = step.suppression == nil ? .pending : .suppressed
            for (position, channel) in step.channels.enumerated() where channel.enabled {
                let platforms = channel.isSink ? nil : Set(config.channel(channel.name)?.platforms ?? [])
                groups.append(
                    OutboxGroup(
                        step: step.index, position: position, channel: channel.name, platforms: platforms,
                        state: state, reason: step.suppression))
            }
        }
        return (rules, groups)
    }
}
