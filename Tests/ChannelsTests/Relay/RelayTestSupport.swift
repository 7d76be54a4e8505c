import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTP
import HeraldHTTPTesting
import RouterTesting

@testable import RelayChannel

/// A relay channel wired to a local fake relay.
struct RelaySetup {
    let channel: RelayChannel
    let server: FakeHTTPServer
    let http: HTTPClient
    let clock: ManualClock
    let sink: RecordingLogSink
    let state: InMemoryChannelState

    /// Builds the channel from `yaml` (`{URL}` is replaced by the fake server's base URL).
    static func make(
        _ yaml: String, state: InMemoryChannelState = InMemoryChannelState(), clock: ManualClock = ManualClock(),
        random: any RandomSource = FixedRandom(), allowHosts: [String] = []
    ) async throws -> RelaySetup {
        let server = try await FakeHTTPServer.start()
        let http = try HTTPClient(configuration: .init(caFile: server.caFile))
        let sink = RecordingLogSink()
        let config = try APNsTestSupport.config(
            yaml.replacingOccurrences(of: "{URL}", with: server.baseURL), name: "relay")
        let withHosts = try ChannelConfig(
            name: "relay", node: config.node, ignoring: ["type"], allowHosts: allowHosts)
        let context = ChannelContext(
            name: "relay", http: http, clock: clock, random: random,
            logger: ChannelLogger(source: "relay", sink: sink, clock: clock), state: state)
        let made = try RelayChannel.factory.make(withHosts, context)
        try withHosts.finish()
        guard let channel = made as? RelayChannel else { throw TestFailure("factory did not make a RelayChannel") }
        return RelaySetup(channel: channel, server: server, http: http, clock: clock, sink: sink, state: state)
    }

    func stop() async {
        await http.shutdown()
        await server.stop()
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
            name: "relay", http: try HTTPClient(), clock: ManualClock(), random: FixedRandom(),
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
