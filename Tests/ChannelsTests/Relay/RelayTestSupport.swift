import ChannelAPI
import Foundation
import HeraldCrypto
import RouterTesting

@testable import RelayChannel

/// A relay channel built by its factory on a scripted relay at ``baseURL``.
struct RelaySetup {
    /// Where the scripted relay answers: a loopback address, so that `allow-hosts` and the URL policy
    /// apply to it as to a relay on the local network.
    static let baseURL = "https://127.0.0.1:8443"
    let channel: RelayChannel
    let http: ScriptedTransport
    let clock: ManualClock
    let sink: RecordingLogSink
    let state: InMemoryChannelState

    /// Builds the channel from `yaml` (`{URL}` is replaced by ``baseURL``).
    static func make(
        _ yaml: String, state: InMemoryChannelState = InMemoryChannelState(), clock: ManualClock = ManualClock(),
        random: any RandomSource = FixedRandom(), allowHosts: [String] = []
    ) throws -> RelaySetup {
        let http = ScriptedTransport()
        let sink = RecordingLogSink()
        let config = try APNsTestSupport.config(yaml.replacingOccurrences(of: "{URL}", with: baseURL), name: "relay")
        let withHosts = try ChannelConfig(
            name: "relay", node: config.node, ignoring: ["type"], allowHosts: allowHosts)
        let context = ChannelContext(
            name: "relay", http: http, clock: clock, random: random,
            logger: ChannelLogger(source: "relay", sink: sink, clock: clock), state: state)
        let made = try RelayChannel.factory.make(withHosts, context)
        try withHosts.finish()
        guard let channel = made as? RelayChannel else { throw TestFailure("factory did not make a RelayChannel") }
        return RelaySetup(channel: channel, http: http, clock: clock, sink: sink, state: state)
    }
}

enum RelayTest {
    /// A target with a fixed delivery id.
    static func target(_ device: Device, _ n: Int = 0) -> DeliveryTarget {
        DeliveryTarget(device: device, deliveryId: "delivery-\(n)")
    }

    /// An `ios` device with a hex token and optional pushKey/environment.
    static func ios(_ id: String, token: String, pushKey: [UInt8]? = nil, environment: String? = nil) -> Device {
        var f: [String: JSONValue] = ["token": .string(token)]
        if let pushKey { f["pushKey"] = .string(Base64.encode(pushKey)) }
        if let environment { f["environment"] = .string(environment) }
        return Device(deviceId: id, platform: "ios", fields: f)
    }

    /// A config error's text from building `yaml`, or nil when it builds.
    static func configError(_ yaml: String) throws -> String? {
        let config = try APNsTestSupport.config(yaml, name: "relay")
        let context = ChannelContext(
            name: "relay", http: ScriptedTransport(), clock: ManualClock(), random: FixedRandom(),
            logger: ChannelLogger(source: "relay", sink: RecordingLogSink()), state: InMemoryChannelState())
        do {
            _ = try RelayChannel.factory.make(config, context)
            try config.finish()
            return nil
        } catch {
            return error.description
        }
    }

    /// A JSON object from request body bytes.
    static func object(_ body: [UInt8]) throws -> [String: JSONValue] {
        guard let o = try JSONValue.parse(body).objectValue else { throw TestFailure("body is not an object") }
        return o
    }
}
