import ChannelAPI
import ChannelSupport

/// `server.relays.home-assistant`: the receiving end of a Home Assistant companion app's `push_url`
/// (the mobile_app push forwarder, seed 003). Home Assistant Core posts `{message, title?, data?,
/// push_token, registration_info}` or the encrypted form `{encrypted: true, encrypted_data, …}`; the
/// forwarder picks the channel by `registration_info.app_id` (`apps:`, prefix wildcards), sends once
/// through Herald's own `apns` or `fcm` channel and answers as Home Assistant reads it: 201
/// `{messageId, rateLimits}`, 429 with `rateLimits` over the per-token daily limit, 500
/// `{errorType: "InvalidToken", message}` for a dead token, 400 `{errorType, message}` for bad input.
public struct HomeAssistantForwarder: InboundRelay {
    /// The module registered under `home-assistant` (own keys: `apps`, `daily-limit`).
    public static let module = InboundRelayModule(name: "home-assistant", keys: ["apps", "daily-limit"]) {
        config throws(ConfigError) in
        var relay = HomeAssistantForwarder(fallback: config.channel)
        for (key, value) in config.ownKeys {
            switch key {
            case "apps": relay.apps = try HomeAssistantAppMap.read(value)
            default:
                relay.dailyLimit = try value.int("server.relays.home-assistant.daily-limit")
                guard (1...1_000_000).contains(relay.dailyLimit) else {
                    throw value.error("server.relays.home-assistant.daily-limit must be 1 to 1000000")
                }
            }
        }
        return relay
    }

    /// The channel for an app id no `apps` entry matches (`channel:`).
    var fallback: String
    /// App-id patterns to channel names.
    var apps = HomeAssistantAppMap()
    /// Pushes per token per UTC day (HA's hosted forwarder allows 500).
    var dailyLimit = 500

    /// HA's hosted forwarder paths (iOS and Android `push_url`s name them) and a generic one.
    public var routes: [RelayRoute] {
        ["/api/sendPush/iOS/v1", "/api/sendPush/android/v1", "/v1/home-assistant/push"].map { RelayRoute("POST", $0) }
    }

    /// The channel for an app id: the most specific `apps` match, else `channel:`.
    func channel(for appId: String) -> String { apps.channel(for: appId) ?? fallback }

    /// Validates, counts, sends once, answers with the upstream outcome.
    public func handle(_ request: RelayRequest, delivery: RelayDelivery) async -> RelayResponse {
        let push: HomeAssistantPush
        let prepared: PreparedPush?
        let through: RelayDelivery
        do throws(HomeAssistantPush.Refusal) {
            push = try HomeAssistantPush.parse(request.body)
            through = delivery.through(channel(for: push.appId))
            prepared = try Self.prepare(push, kind: through.kind)
        } catch {
            return Self.error(error.status, error.errorType, error.message)
        }
        guard let prepared else {
            return Self.error(500, "Misconfigured", "The relay's channel \(through.channelName) cannot send.")
        }
        let limit = HomeAssistantRateLimit(store: delivery.state("home-assistant"), maximum: dailyLimit)
        let now = delivery.clock.now()
        let reserved: (allowed: Bool, counters: HomeAssistantRateLimit.Counters)
        do { reserved = try limit.reserve(push.token, now: now) } catch {
            return Self.error(503, "Unavailable", "The relay's store cannot serve.", headers: ["Retry-After": "5"])
        }
        guard reserved.allowed else {
            return RelayResponse(
                429,
                [
                    "errorType": "RateLimited",
                    "message":
                        "The given target has reached the maximum number of notifications allowed per day. Please try again later.",
                    "rateLimits": limit.json(reserved.counters),
                ])
        }
        guard let result = await through.send(prepared, to: [RelayTarget(token: push.token)])?.first else {
            return Self.error(500, "Misconfigured", "The relay's channel \(through.channelName) cannot send.")
        }
        let delivered = result.outcome == .delivered || result.outcome == .suppressed
        let counters = limit.record(push.token, success: delivered, now: now, fallback: reserved.counters)
        var answer = Self.answer(result, messageId: result.providerMessageId ?? through.freshId())
        if case .object(var o) = answer.body {
            o["rateLimits"] = limit.json(counters)
            answer.body = .object(o)
        }
        return answer
    }

    /// The provider push for `kind`; nil when the channel cannot send prepared pushes (pure).
    static func prepare(_ push: HomeAssistantPush, kind: PreparedPushKind?) throws(HomeAssistantPush.Refusal)
        -> PreparedPush?
    {
        switch kind {
        case .apns?:
            guard (8...200).contains(push.token.utf8.count), push.token.utf8.allSatisfy(RelayHex.isDigit) else {
                throw HomeAssistantPush.Refusal(
                    status: 400, errorType: "InvalidToken", message: "push_token must be an APNs token in hex.")
            }
            return try push.apns()
        case .fcm?: return try push.fcm()
        case nil: return nil
        }
    }

    /// The answer to one delivery result (pure): 201 `{messageId}`; a dead token 500 `InvalidToken`
    /// (what Herald's own home-assistant relay channel and HA's hosted forwarder use); a throttled or
    /// unavailable provider 503 (+ `Retry-After`), unreachable 502; a push too large 500
    /// `PayloadTooLarge`; credentials or topic refused 502; any other refusal 400.
    static func answer(_ r: DeliveryResult, messageId: String) -> RelayResponse {
        let reason = r.reason ?? "the provider refused the push"
        switch r.outcome {
        case .delivered, .suppressed: return RelayResponse(201, ["messageId": .string(messageId)])
        case .dead: return error(500, "InvalidToken", "The push token is not valid any more: \(reason)")
        case .retry:
            let seconds = r.retryAfter.map { max(1, Int($0.components.seconds)) } ?? 1
            let status = r.status == nil ? 502 : 503
            return error(
                status, "Unavailable", "The provider cannot take it now: \(reason)",
                headers: [
                    "Retry-After": String(seconds)
                ])
        case .failed:
            if r.status == 413 || reason.hasPrefix("PayloadTooLarge") || reason.contains("too large") {
                return error(500, "PayloadTooLarge", reason)
            }
            if r.status == nil || r.status == 403 { return error(502, "UpstreamRejected", reason) }
            return error(400, "Rejected", reason)
        }
    }

    /// `{errorType, errorStep, message}`: Home Assistant logs `message`.
    static func error(_ status: Int, _ type: String, _ message: String, headers: [String: String] = [:])
        -> RelayResponse
    {
        RelayResponse(
            status, ["errorType": .string(type), "errorStep": "sendNotification", "message": .string(message)],
            headers: headers)
    }
}

/// `apps:` of the home-assistant relay: app-id patterns (exact, or a prefix ending in `*`) to channel
/// names. The longest matching pattern wins; an exact id beats a prefix of the same length.
struct HomeAssistantAppMap: Sendable, Equatable {
    /// Pattern → channel, as configured.
    var entries: [(pattern: String, channel: String)] = []

    static func == (a: Self, b: Self) -> Bool {
        a.entries.map(\.pattern) == b.entries.map(\.pattern) && a.entries.map(\.channel) == b.entries.map(\.channel)
    }

    /// Reads the mapping; a `*` anywhere but at the end, an empty pattern or channel is a config error.
    static func read(_ node: ConfigNode) throws(ConfigError) -> HomeAssistantAppMap {
        var map = HomeAssistantAppMap()
        for e in try node.mapping("server.relays.home-assistant.apps") {
            let stem = e.key.hasSuffix("*") ? String(e.key.dropLast()) : e.key
            guard !stem.isEmpty, !stem.contains("*") else {
                throw e.keyNode.error(
                    "server.relays.home-assistant.apps: '\(e.key)' must be an app id, or a prefix ending in *")
            }
            let channel = try e.value.string("server.relays.home-assistant.apps.\(e.key)")
            guard !channel.isEmpty else {
                throw e.value.error("server.relays.home-assistant.apps.\(e.key) must name an apns or fcm channel")
            }
            map.entries.append((e.key, channel))
        }
        return map
    }

    /// The channel for `appId`; nil when no pattern matches.
    func channel(for appId: String) -> String? {
        var best: (score: Int, channel: String)?
        for (pattern, channel) in entries {
            let score: Int
            if pattern.hasSuffix("*") {
                guard appId.hasPrefix(pattern.dropLast()) else { continue }
                score = 2 * (pattern.utf8.count - 1)
            } else {
                guard appId == pattern else { continue }
                score = 2 * pattern.utf8.count + 1
            }
            if score > best?.score ?? -1 { best = (score, channel) }
        }
        return best?.channel
    }
}
