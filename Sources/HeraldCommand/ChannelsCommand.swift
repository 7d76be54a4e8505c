import ChannelAPI
import ChannelTesting
import Foundation
import HeraldChannels
import Router

/// `herald channels check NAME`: runs ``ChannelConformance`` against the channel `NAME` of the config,
/// built from its own config section by its type's factory (a built-in type, or a plugin compiled
/// into this `herald`), over a scripted transport: no request leaves the machine.
///
/// Options: `--devices JSON` (an object, or an array of them; required for a channel that serves
/// devices), `--dead STATUS,…` (the provider statuses the channel's own table calls "token gone"),
/// `--idempotency-key header:NAME | json:a.b.c | none` (where the provider's key is; default the
/// `apns-id`, `idempotency-key` or `webhook-id` header).
enum ChannelsCommand {
    /// What the check found.
    struct Outcome {
        var channel: String
        var type: String
        var violations: [ChannelConformance.Violation]
    }

    /// Builds the check for the channel `name` of `config`.
    static func check(
        name: String, config: HeraldConfig, registry: ChannelRegistry, devicesJSON: String?, dead: String?,
        idempotencyKey: String?
    ) async throws -> Outcome {
        guard let spec = config.channel(name) else {
            let known = config.channels.map(\.name).joined(separator: ", ")
            throw InputError("no channel '\(name)' in the config (channels: \(known))")
        }
        guard let factory = registry.factory(for: spec.type) else {
            throw InputError("channel \(name): unknown type '\(spec.type)'")
        }
        let devices = try Self.devices(devicesJSON, registry: registry)
        if !spec.isSink, devices.isEmpty {
            throw InputError(
                "channel \(name) serves devices (\(spec.platforms.joined(separator: ", "))): give one with --devices JSON"
            )
        }
        if let off = devices.first(where: { !spec.platforms.contains($0.platform) }) {
            throw InputError("device \(off.deviceId): platform \(off.platform) is not served by channel \(name)")
        }
        var check = ChannelConformance(
            factory: factory, config: "", devices: devices, deadAnswers: try Self.deadAnswers(dead),
            idempotencyKey: try Self.keyReader(idempotencyKey))
        check.makeConfig = {
            try ChannelConfig(
                name: spec.name, node: spec.node, ignoring: ConfigLoader.commonChannelKeys,
                allowHosts: spec.allowHosts)
        }
        return Outcome(channel: name, type: spec.type, violations: await check.run())
    }

    /// `--devices`: one object or an array of objects, each checked as a registration.
    static func devices(_ text: String?, registry: ChannelRegistry) throws -> [Device] {
        guard let text else { return [] }
        let value: JSONValue
        do { value = try JSONValue.parse(Array(text.utf8)) } catch { throw InputError("--devices: \(error)") }
        let items = value.arrayValue ?? [value]
        return try items.map { item throws in
            do { return try registry.device(json: item) } catch { throw InputError("--devices: \(error)") }
        }
    }

    /// `--dead 410,404`: scripted answers with those statuses and an empty JSON body.
    static func deadAnswers(_ text: String?) throws -> [ChannelConformance.ScriptedAnswer] {
        guard let text else { return [] }
        return try text.split(separator: ",").map { part throws in
            guard let status = Int(part.trimmingCharacters(in: .whitespaces)), (400...599).contains(status) else {
                throw InputError("--dead takes HTTP statuses 400-599, comma-separated (got \(part))")
            }
            return .status(status, "{}")
        }
    }

    /// `--idempotency-key`: where the provider's key is in a request.
    static func keyReader(_ text: String?) throws -> (@Sendable (HTTPRequest) -> String?)? {
        guard let text else { return ChannelConformance.headerIdempotencyKey }
        if text == "none" { return nil }
        if text.hasPrefix("header:") {
            let name = String(text.dropFirst("header:".count)).lowercased()
            return { request in request.headers.first { $0.name.lowercased() == name }?.value }
        }
        if text.hasPrefix("json:") {
            let path = text.dropFirst("json:".count).split(separator: ".").map(String.init)
            return { request in
                var value = try? JSONValue.parse(request.body)
                for key in path { value = value?[key] }
                return value?.stringValue
            }
        }
        throw InputError("--idempotency-key takes header:NAME, json:a.b.c or none (got \(text))")
    }

    /// The report: the verdict, then each violation with what to fix.
    static func text(_ outcome: Outcome) -> String {
        guard !outcome.violations.isEmpty else {
            return "channel \(outcome.channel) (\(outcome.type)) conforms: every rule of docs/channels.md holds"
        }
        var lines = ["channel \(outcome.channel) (\(outcome.type)): \(outcome.violations.count) violation(s)"]
        for v in outcome.violations {
            lines.append("- \(v.rule): \(v.message)")
            if let fix = ChannelConformance.fixes[v.rule] { lines.append("  fix: \(fix)") }
        }
        return lines.joined(separator: "\n")
    }

    /// The report as JSON.
    static func json(_ outcome: Outcome) -> JSONValue {
        .object([
            "channel": .string(outcome.channel), "type": .string(outcome.type),
            "conforms": .bool(outcome.violations.isEmpty),
            "violations": .array(
                outcome.violations.map { v in
                    .object([
                        "rule": .string(v.rule), "message": .string(v.message),
                        "fix": .string(ChannelConformance.fixes[v.rule] ?? ""),
                    ])
                }),
        ])
    }
}
