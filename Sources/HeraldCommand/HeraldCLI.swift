import ChannelAPI
import Dispatch
import Foundation
import HeraldChannels
import HeraldServer
import Router

/// The operator CLI (contract §2).
struct HeraldCLI {
    static let usage = """
        usage: herald <command> [-c FILE] [--format text|json]

        commands:
          validate [--offline]                       check the config (--offline: without key files and secrets)
          explain --namespace NS --type T [--severity S] [--json NOTIFICATION]
          graph [--format dot|mermaid]               the channel graph as a diagram
          devices register [--json J]                upsert devices (JSON object, or one per line on stdin)
          devices list [--namespace NS]
          devices remove --namespace NS (--device-id ID [--platform P] | --token T)
          send [--json J]                            route one notification (JSON on stdin if no --json)
          drain [--until-empty] [--timeout SECONDS]  run due retries from the outbox
          run                                        worker: retries, inbound events, SIGHUP reload
          serve                                      run + the HTTP API (server: section)
          tokens new --name N [--namespaces a,b] [--scopes send,read]   a new API token and its config entry
          history [--namespace NS] [--id ID] [--limit N]
          event --id ID [--namespace NS] --kind received|tapped|dismissed|action [--action A] [--device-id D]
          channels check NAME [--devices JSON] [--dead 410,404] [--idempotency-key header:N|json:a.b|none]
                                                     run the conformance rules on a configured channel (1: violations)
          keys vapid [--channel NAME]                print the VAPID public key
          keys public --channel NAME                 print a channel's public key

        config: -c FILE, else $HERALD_CONFIG, ./herald.yaml, $HERALD_HOME/herald.yaml (HERALD_HOME defaults to ~/.herald)
        exit codes: 0 ok, 1 runtime failure, 2 usage, 65 invalid input or config
        """

    /// The channel types this `herald` knows: the built-ins, and the plugins of a custom build
    /// (``HeraldCommand/main(registry:arguments:)`` sets it for the whole run).
    @TaskLocal static var registry: ChannelRegistry = HeraldChannels.registry

    static func run(_ argv: [String]) async -> Int32 {
        do {
            let args = try Arguments(argv)
            if args.flags.contains("help") || args.positional.isEmpty {
                print(usage)
                return args.positional.isEmpty && !args.flags.contains("help") ? 2 : 0
            }
            return try await dispatch(args)
        } catch let e as UsageError {
            eprint("herald: \(e.description)\n\(usage)")
            return 2
        } catch let e as ConfigError {
            eprint(e.description)
            return 65
        } catch let e as ValidationError {
            eprint("herald: invalid input: \(e.description)")
            return 65
        } catch let e as InputError {
            eprint("herald: invalid input: \(e.description)")
            return 65
        } catch {
            eprint("herald: \(error)")
            return 1
        }
    }

    static func dispatch(_ args: Arguments) async throws -> Int32 {
        let command = args.positional[0]
        let format = args.value("format") ?? "text"
        switch command {
        case "validate":
            try args.allow(["format", "offline"])
            let path = try configPath(args)
            let config = try Router.validate(
                configPath: path, registry: HeraldCLI.registry, offline: args.flags.contains("offline"))
            _ = try ServerConfig(config)
            for w in config.warnings { eprint(w.description) }
            let routes = 1 + config.routes.namespaces.count
            if format == "json" {
                output(
                    .object([
                        "ok": true, "channels": .number(Double(config.channels.count)),
                        "routes": .number(Double(routes)),
                        "warnings": .array(config.warnings.map { .string($0.description) }),
                    ]))
            } else {
                print("ok: \(config.channels.count) channels, \(routes) routes")
            }
            return 0
        case "graph":
            try args.allow(["format"])
            let config = try ConfigLoader.load(
                path: try configPath(args), registry: HeraldCLI.registry, offline: true)
            _ = try ServerConfig(config)
            switch format {
            case "dot", "text": print(GraphRenderer.dot(config))
            case "mermaid": print(GraphRenderer.mermaid(config))
            case "json": output(GraphRenderer.json(config))
            default: throw UsageError("graph --format must be dot or mermaid")
            }
            return 0
        case "explain":
            try args.allow(["format", "namespace", "type", "severity", "json"])
            var notification: HeraldNotification
            if let j = args.value("json") {
                notification = try HeraldNotification(jsonText: j)
            } else {
                var o: [String: JSONValue] = ["title": "(explain)"]
                if let ns = args.value("namespace") { o["namespace"] = .string(ns) }
                if let t = args.value("type") { o["type"] = .string(t) }
                if let s = args.value("severity") { o["severity"] = .string(s) }
                notification = try HeraldNotification(json: .object(o))
            }
            if args.value("json") != nil {
                if let ns = args.value("namespace") { notification.namespace = ns }
                if let t = args.value("type") { notification.type = t }
            }
            // A dry run: no key files or secrets needed (issue 14 §4). The server: section is checked
            // as validate checks it.
            let path = try configPath(args)
            try checkServerSection(path, offline: true)
            let plan = try Router.explain(notification, configPath: path, registry: HeraldCLI.registry)
            if format == "json" { output(plan.json) } else { print(plan.text) }
            return 0
        case "devices":
            return try await devices(args, format: format)
        case "send":
            try args.allow(["format", "json"])
            let text = try args.value("json") ?? readStdin()
            let notification = try HeraldNotification(jsonText: text)
            return try await withRouter(args) { router in
                // The report is written as it is read from the store, page by page: a large fan-out
                // does not hold its deliveries in memory (issue 19).
                let summary = try await router.sendSummarized(notification)
                if summary.replayed {
                    eprint(
                        "herald: notification \(summary.id) was already sent; not routed again (the stored report follows)"
                    )
                }
                if format == "json" {
                    // The same bytes as the report's canonical JSON (keys sorted), in 64 KiB pieces.
                    try router.writeReportJSON(of: summary, piece: 65_536) {
                        FileHandle.standardOutput.write(Data($0))
                    }
                } else {
                    print("notification \(summary.id) (\(summary.namespace))")
                    try router.forEachDelivery(of: summary.id) { d in
                        var line = "  \(d.channel)"
                        if let id = d.deviceId { line += " → \(id) (\(d.platform ?? ""))" }
                        line += ": \(d.state.reportOutcome)"
                        if let s = d.status { line += " \(s)" }
                        if let r = d.reason { line += " — \(r)" }
                        print(line)
                    }
                    if summary.total == 0 { print("  (no deliveries planned)") }
                }
                return 0
            }
        case "drain":
            try args.allow(["format", "until-empty", "timeout"])
            var timeout: Duration?
            if let t = args.value("timeout") {
                guard let s = Double(t), s >= 0, s <= ConfigNode.maximumDuration.timeInterval else {
                    throw UsageError("--timeout must be a number of seconds (at most 36500 days)")
                }
                timeout = .milliseconds(Int64(s * 1000))
            }
            return try await withRouter(args) { router in
                let summary = try await router.drain(untilEmpty: args.flags.contains("until-empty"), timeout: timeout)
                if format == "json" {
                    output([
                        "attempted": .number(Double(summary.attempted)),
                        "remaining": .number(Double(summary.remaining)),
                    ])
                } else {
                    print("drained: \(summary.attempted) attempted, \(summary.remaining) remaining")
                }
                return 0
            }
        case "run":
            try args.allow(["format"])
            return try await runWorker(args)
        case "serve":
            try args.allow(["format"])
            return try await ServeCommand.serve(configPath: try configPath(args))
        case "tokens":
            try args.allow(["format", "name", "namespaces", "scopes"])
            guard args.positional.count >= 2, args.positional[1] == "new" else { throw UsageError("tokens needs: new") }
            guard let name = args.value("name") else { throw UsageError("tokens new needs --name NAME") }
            func split(_ v: String?, _ fallback: [String]) -> [String] {
                v.map {
                    $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                }
                    ?? fallback
            }
            let (token, yaml) = try ServeCommand.newToken(
                name: name, namespaces: split(args.value("namespaces"), ["default"]),
                scopes: split(args.value("scopes"), ["send", "devices", "events", "read"]))
            if format == "json" {
                output(["token": .string(token), "yaml": .string(yaml)])
            } else {
                print("token (shown once; only its hash goes in the config): \(token)\n")
                print("add to server.tokens:\n\(yaml)")
            }
            return 0
        case "history":
            try args.allow(["format", "namespace", "id", "limit"])
            let limit = Int(args.value("limit") ?? "50") ?? 50
            return try await withRouter(args) { router in
                let namespace = args.value("namespace")
                var entries: [HistoryEntry]
                if let id = args.value("id") {
                    // Ids are unique per namespace: every namespace's notification with this id.
                    entries = []
                    for k in try router.notificationKeys(
                        publicID: id, covering: { namespace == nil || $0 == namespace })
                    {
                        entries += try router.history(id: k.key, limit: 1)
                    }
                } else {
                    entries = try router.history(namespace: namespace, limit: limit)
                }
                if format == "json" {
                    output(.array(entries.map(\.json)))
                } else {
                    for e in entries {
                        print(
                            "\(ISO8601DateFormatter().string(from: e.createdAt)) \(NotificationKey.publicID(of: e.notification.id)) [\(e.notification.namespace)/\(e.notification.type)] \(e.notification.title ?? "")"
                        )
                        for d in e.deliveries {
                            print(
                                "  \(d.channel) \(d.deviceId ?? "-"): \(d.state.rawValue) (attempts \(d.attempts))\(d.reason.map { " — \($0)" } ?? "")"
                            )
                        }
                        for ev in e.events {
                            print(
                                "  event \(ev.kind.rawValue)\(ev.actionId.map { " \($0)" } ?? "") at \(ISO8601DateFormatter().string(from: ev.at))"
                            )
                        }
                    }
                    if entries.isEmpty { print("(no notifications)") }
                }
                return 0
            }
        case "event":
            try args.allow(["format", "id", "namespace", "kind", "action", "device-id"])
            guard let id = args.value("id") else { throw UsageError("event needs --id") }
            guard let k = args.value("kind"), let kind = ChannelEvent.Kind(rawValue: k) else {
                throw UsageError("event needs --kind received|tapped|dismissed|action")
            }
            if kind == .action, args.value("action") == nil { throw UsageError("--kind action needs --action ID") }
            return try await withRouter(args) { router in
                do {
                    // Ids are unique per namespace: --namespace chooses when several sent this id.
                    let namespace = args.value("namespace")
                    let keys = try router.notificationKeys(
                        publicID: id, covering: { namespace == nil || $0 == namespace })
                    guard keys.count <= 1 else {
                        throw InputError(
                            "notification id \(id) is used in namespaces "
                                + "\(keys.map(\.namespace).sorted().joined(separator: ", ")); add --namespace")
                    }
                    let e = try router.recordEvent(
                        ChannelEvent(
                            notificationId: keys.first?.key ?? id, kind: kind, actionId: args.value("action"),
                            deviceId: args.value("device-id")))
                    if format == "json" { output(e.json) } else { print("recorded \(e.kind.rawValue) for \(id)") }
                    return 0
                } catch let e as StoreError {
                    throw InputError(e.description)
                }
            }
        case "channels":
            try args.allow(["format", "devices", "dead", "idempotency-key"])
            guard args.positional.count >= 3, args.positional[1] == "check" else {
                throw UsageError("channels needs: check NAME")
            }
            let config = try ConfigLoader.load(path: try configPath(args), registry: HeraldCLI.registry)
            let outcome = try await ChannelsCommand.check(
                name: args.positional[2], config: config, registry: HeraldCLI.registry,
                devicesJSON: args.value("devices"), dead: args.value("dead"),
                idempotencyKey: args.value("idempotency-key"))
            if format == "json" { output(ChannelsCommand.json(outcome)) } else { print(ChannelsCommand.text(outcome)) }
            return outcome.violations.isEmpty ? 0 : 1
        case "keys":
            try args.allow(["format", "channel", "rotate"])
            guard args.positional.count >= 2 else { throw UsageError("keys needs: vapid, or public --channel NAME") }
            return try await withRouter(args) { router in
                let (field, key) = try await KeysCommand.key(
                    args.positional[1], router: router, channel: args.value("channel"),
                    rotate: args.flags.contains("rotate"))
                if format == "json" { output([field: .string(key)]) } else { print(key) }
                return 0
            }
        default:
            throw UsageError("unknown command '\(command)'")
        }
    }

    static func devices(_ args: Arguments, format: String) async throws -> Int32 {
        guard args.positional.count >= 2 else { throw UsageError("devices needs register, list or remove") }
        switch args.positional[1] {
        case "register":
            try args.allow(["format", "json"])
            let text = try args.value("json") ?? readStdin()
            var devices: [Device] = []
            // The input line of each device (1 for a single JSON value), for error messages.
            var lines: [Int] = []
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if let single = try? JSONValue.parse(trimmed) {
                devices.append(try HeraldCLI.registry.device(json: single))
                lines.append(1)
            } else {
                // Lines end in "\n" or "\r\n" (one Character); count the blank ones trimmed off the top.
                let leading = text.prefix { $0.isWhitespace }.filter(\.isNewline).count
                for (n, line) in trimmed.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
                    .enumerated()
                where !line.trimmingCharacters(in: .whitespaces).isEmpty {
                    do {
                        devices.append(try HeraldCLI.registry.device(jsonText: String(line)))
                        lines.append(leading + n + 1)
                    } catch {
                        throw InputError("line \(leading + n + 1): \(error.description) (nothing was stored)")
                    }
                }
            }
            guard !devices.isEmpty else { throw InputError("no device JSON given") }
            return try await withRouter(args) { router in
                // Every device is validated before any is stored, and all are stored in one
                // transaction, so a bad line stores nothing.
                let stored: [RegistrationResult]
                do {
                    stored = try await router.register(devices)
                } catch let e as DeviceBatchError {
                    let line = e.index < lines.count ? lines[e.index] : e.index + 1
                    if let v = e.error as? ValidationError {
                        throw InputError("line \(line): \(v.description) (nothing was stored)")
                    }
                    throw RuntimeError("line \(line): \(e.error) (nothing was stored)")
                }
                var results: [JSONValue] = []
                for (d, r) in zip(devices, stored) {
                    for w in r.warnings { eprint("herald: \(w.description)") }
                    results.append(r.json(for: d))
                    if format != "json" {
                        print("\(r.created ? "registered" : "updated") \(d.namespace)/\(d.deviceId) (\(d.platform))")
                    }
                }
                if format == "json" { output(.array(results)) }
                return 0
            }
        case "list":
            try args.allow(["format", "namespace"])
            return try await withRouter(args) { router in
                let list = try router.devices(namespace: args.value("namespace"))
                if format == "json" {
                    output(.array(list.map { router.listingJSON(of: $0) }))
                } else {
                    for d in list {
                        let addr = d.address.map { " " + Redaction.mask($0) } ?? ""
                        let why = router.reach(of: d).unreachableReason.map { " — unreachable: \($0)" } ?? ""
                        print("\(d.namespace)/\(d.deviceId) \(d.platform)\(addr)\(why)")
                    }
                    if list.isEmpty { print("(no devices)") }
                }
                return 0
            }
        case "remove":
            try args.allow(["format", "namespace", "device-id", "platform", "token"])
            let ns = args.value("namespace") ?? "default"
            return try await withRouter(args) { router in
                let n: Int
                if let id = args.value("device-id") {
                    n = try router.unregister(namespace: ns, deviceId: id, platform: args.value("platform"))
                } else if let token = args.value("token") {
                    n = try router.unregister(namespace: ns, token: token)
                } else {
                    throw UsageError("devices remove needs --device-id ID or --token T")
                }
                if format == "json" { output(["removed": .number(Double(n))]) } else { print("removed \(n)") }
                return 0
            }
        default:
            throw UsageError("unknown devices command '\(args.positional[1])'")
        }
    }

    static func runWorker(_ args: Arguments) async throws -> Int32 {
        try await withRouter(args) { router in
            let worker = Task { await router.run() }
            let reload: @Sendable () -> Void = {
                Task {
                    do {
                        let warnings = try reloadChecked(router)
                        for w in warnings { eprint(w.description) }
                        eprint("herald: reloaded")
                    } catch {
                        eprint("herald: reload refused, keeping the old config: \(error)")
                    }
                }
            }
            // Installed before "running" is printed: a signal sent from then on is never lost.
            let signals = SignalPipe.install([SIGTERM, SIGINT, SIGHUP], queue: DispatchQueue(label: "herald.signals")) {
                signal in
                if signal == SIGHUP { reload() } else { worker.cancel() }
            }
            guard let signals else {
                worker.cancel()
                throw UsageError("cannot install signal handlers (pipe failed)")
            }
            defer { signals.cancel() }
            eprint("herald: running (SIGHUP reloads, SIGTERM stops)")
            await worker.value
            eprint("herald: stopped")
            return 0
        }
    }

    static func withRouter(_ args: Arguments, _ body: (Router) async throws -> Int32) async throws -> Int32 {
        let path = try configPath(args)
        try checkServerSection(path)
        let router = try await Router(configPath: path, registry: HeraldCLI.registry)
        do {
            let code = try await body(router)
            await router.shutdown()
            return code
        } catch {
            await router.shutdown()
            throw error
        }
    }

    /// Refuses the config at `path` when its `server:` section is invalid (a ``ConfigError`` at its
    /// position), before anything is opened: a config is valid only with a valid `server:` section,
    /// also for the commands that do not serve (the router keeps the section as a node; HeraldServer
    /// reads it).
    static func checkServerSection(_ path: String, offline: Bool = false) throws {
        _ = try ServerConfig(ConfigLoader.load(path: path, registry: HeraldCLI.registry, offline: offline))
    }

    /// Reloads `router`'s config file all or nothing: a new config whose `server:` section is invalid
    /// is refused (``Router/refuse(_:because:)``) like one whose routes or channels are.
    static func reloadChecked(_ router: Router) throws -> [ConfigWarning] {
        let prepared = try router.prepareReload()
        do throws(ConfigError) {
            _ = try ServerConfig(prepared.config)
        } catch {
            router.refuse(prepared, because: error)
            throw error
        }
        return router.commit(prepared)
    }

    static func configPath(_ args: Arguments) throws -> String {
        let env = ProcessInfo.processInfo.environment
        if let c = args.value("config") { return c }
        if let c = env["HERALD_CONFIG"], !c.isEmpty { return c }
        if FileManager.default.fileExists(atPath: "herald.yaml") { return "herald.yaml" }
        let home = env["HERALD_HOME"] ?? (NSHomeDirectory() + "/.herald")
        let candidate = home + "/herald.yaml"
        if FileManager.default.fileExists(atPath: candidate) { return candidate }
        throw UsageError("no config: pass -c FILE, set HERALD_CONFIG, or create ./herald.yaml or \(candidate)")
    }

    static func readStdin() throws -> String {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard let s = String(data: data, encoding: .utf8), !s.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        else {
            throw InputError("expected JSON on stdin (or pass --json)")
        }
        return s
    }

    static func output(_ value: JSONValue) { print(value.canonicalString) }
}

/// A failure that is not the input's fault (exit 1), with its message.
struct RuntimeError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

func eprint(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }
