import ChannelAPI
import Foundation
import HeraldCrypto

/// The relay protocols `type: relay` speaks.
public enum RelayProtocol: String, Sendable, CaseIterable {
    /// hapi's push relay: `POST {url}/v1/push` with an AES-256-GCM hapi-v1 envelope.
    case hapi
    /// openchamber's signed relay: ECDSA P-256 signed `register-token` and `send` calls.
    case openchamber
    /// Pulse Relay: Live Activity pushes signed with the device's HMAC pushKey.
    case pulse
    /// A Home Assistant `mobile_app` push forwarder (the `push_url` HA posts to).
    case homeAssistant = "home-assistant"

    /// The device platform this protocol serves.
    public var platform: String {
        switch self {
        case .hapi, .openchamber: "ios"
        case .pulse: "pulse"
        case .homeAssistant: "mobile-app"
        }
    }
}

/// `type: relay`: push through a relay that holds the provider credentials.
///
/// ```yaml
/// hapi-relay:
///   type: relay
///   protocol: hapi            # hapi | openchamber | pulse | home-assistant (required)
///   url: https://push.hapi.run
/// ha-relay:
///   type: relay
///   protocol: home-assistant
///   encryption: secretbox     # none (default) | secretbox: notification fields sealed with the device secret
/// ```
///
/// One channel speaks one protocol and, without `platforms:`, serves only that protocol's platform
/// (`ios` for hapi and openchamber, `pulse` for pulse, `mobile-app` for home-assistant); devices of
/// other platforms are passed through ``validateRegistration(_:)`` unchanged and get no delivery. See
/// `docs/channels/relay.md` for every key, wire format and outcome table.
public final class RelayChannel: Channel, PublicKeyProviding {
    /// The configured protocol.
    public let relayProtocol: RelayProtocol
    let context: ChannelContext
    let allowHosts: [String]
    let hapi: HapiRelay?
    let openchamber: OpenChamberRelay?
    let pulse: PulseRelay?
    let homeAssistant: HomeAssistantRelay?

    /// The factory registered under `relay`.
    /// A channel without `platforms:` serves only its protocol's platform.
    public static let factory = ChannelFactory(
        type: "relay", defaultPlatforms: ["ios", "pulse", "mobile-app"], platforms: RelayPlatforms.all,
        platformsForConfig: { value in value("protocol").flatMap(RelayProtocol.init(rawValue:)).map { [$0.platform] } },
        make: { config, context throws(ConfigError) in try RelayChannel(config: config, context: context) })

    /// Builds the channel from its config (no network I/O).
    public init(config: ChannelConfig, context: ChannelContext) throws(ConfigError) {
        guard let name = try config.choice("protocol", RelayProtocol.allCases.map(\.rawValue)),
            let proto = RelayProtocol(rawValue: name)
        else {
            throw config.error(
                at: nil,
                "channel \(config.name): missing required key 'protocol' (hapi, openchamber, pulse, home-assistant)")
        }
        self.relayProtocol = proto
        self.context = context
        self.allowHosts = config.allowHosts
        var hapi: HapiRelay?
        var openchamber: OpenChamberRelay?
        var pulse: PulseRelay?
        var homeAssistant: HomeAssistantRelay?
        switch proto {
        case .hapi:
            hapi = HapiRelay(url: try RelayChannel.baseURL(config), context: context)
        case .openchamber:
            openchamber = OpenChamberRelay(url: try RelayChannel.baseURL(config), context: context)
        case .pulse:
            // Every push goes to current-relay, so it is always one of the relays the operator
            // allows: taken from allowed-relays when only that is set, refused when both are set
            // and disagree. Only with neither (or current-relay alone) do the built-in relays apply.
            let listed = try config.stringList("allowed-relays")
            if let listed, listed.isEmpty {
                throw config.error(at: "allowed-relays", "allowed-relays must list at least one https relay URL")
            }
            let allowed = listed ?? PulseRelay.defaultAllowedRelays
            let named = try config.string("current-relay")
            let current = named ?? listed?.first ?? PulseRelay.defaultCurrentRelay
            for (key, url) in allowed.map({ ("allowed-relays", $0) }) + [("current-relay", current)] {
                guard URLComponents(string: url)?.scheme?.lowercased() == "https" else {
                    throw config.error(at: key, "\(key): \(url) is not an https URL")
                }
            }
            let normalised = allowed.map(PulseRelay.normalise)
            let currentNormalised = PulseRelay.normalise(current)
            if listed != nil, !normalised.contains(currentNormalised) {
                throw config.error(
                    at: "current-relay",
                    "current-relay \(current) is not in allowed-relays (\(allowed.joined(separator: ", "))): every push "
                        + "goes to current-relay, so list it there too")
            }
            pulse = PulseRelay(
                allowedRelays: normalised.contains(currentNormalised) ? normalised : normalised + [currentNormalised],
                currentRelay: currentNormalised, context: context)
        case .homeAssistant:
            let encryption = try config.choice("encryption", ["none", "secretbox"]) ?? "none"
            homeAssistant = HomeAssistantRelay(
                allowHosts: config.allowHosts, encrypt: encryption == "secretbox", context: context)
        }
        self.hapi = hapi
        self.openchamber = openchamber
        self.pulse = pulse
        self.homeAssistant = homeAssistant
    }

    /// The required `url:` without a trailing slash.
    static func baseURL(_ config: ChannelConfig) throws(ConfigError) -> String {
        let url = try config.requiredString("url")
        if config.isUnresolved("url") { return url }
        guard let comps = URLComponents(string: url), ["https", "http"].contains(comps.scheme?.lowercased() ?? ""),
            comps.host?.isEmpty == false
        else { throw config.error(at: "url", "url must be an http(s) URL") }
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// Validates devices of this protocol's platform; any other platform is returned unchanged.
    public func validateRegistration(_ device: Device) async throws(ValidationError) -> Device {
        guard device.platform == relayProtocol.platform else { return device }
        switch relayProtocol {
        case .hapi: return try HapiRelay.validate(device)
        case .pulse: return try pulse?.validate(device) ?? device
        case .homeAssistant: return try homeAssistant?.validate(device) ?? device
        case .openchamber: return device
        }
    }

    /// Delivers to the targets of this protocol's platform; targets of another platform fail with a
    /// reason naming the mismatch (set `platforms:` to avoid them).
    public func deliver(_ request: DeliveryRequest) async -> [DeliveryResult] {
        var mine: [DeliveryTarget] = []
        var results: [DeliveryResult] = []
        for target in request.targets {
            if target.device?.platform == relayProtocol.platform {
                mine.append(target)
            } else {
                results.append(
                    .failed(
                        target,
                        reason:
                            "relay protocol \(relayProtocol.rawValue) serves platform \(relayProtocol.platform), not \(target.device?.platform ?? "none")"
                    ))
            }
        }
        guard !mine.isEmpty else { return results }
        var scoped = request
        scoped.targets = mine
        switch relayProtocol {
        case .hapi:
            if let hapi { results += await hapi.deliver(scoped) }
        case .openchamber:
            if let openchamber { results += await openchamber.deliver(scoped) }
        case .pulse:
            if let pulse { results += await pulse.deliver(scoped) }
        case .homeAssistant:
            if let homeAssistant { results += await homeAssistant.deliver(scoped) }
        }
        return results
    }

    /// Registers an openchamber device at the relay; other protocols do nothing.
    public func didRegister(_ device: Device) async {
        guard device.platform == relayProtocol.platform, let openchamber else { return }
        await openchamber.register(device)
    }

    /// openchamber only: the public JWK with its serverId as canonical JSON
    /// `{"crv","kty","serverId","x","y"}`, creating the key pair on first use. `rotate` is refused:
    /// the relay binds device tokens to the serverId, which is derived from the key.
    public func publicKey(rotate: Bool) async throws -> String {
        guard let openchamber else {
            throw RelayKeyError("relay protocol \(relayProtocol.rawValue) has no public key")
        }
        if rotate {
            throw RelayKeyError(
                "key rotation is not supported for the openchamber relay: device tokens are bound to the serverId, "
                    + "which is derived from the key; a new key would orphan every registration")
        }
        return try openchamber.publicKeyJSON()
    }
}

/// A relay key-pair problem (missing, corrupt, or a refused rotation).
public struct RelayKeyError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}
