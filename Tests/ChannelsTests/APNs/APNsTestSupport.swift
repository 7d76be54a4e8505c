import ChannelAPI
import Foundation
import HeraldCrypto
import HeraldHTTP
import HeraldHTTPTesting
import HeraldYAML
import Router
import RouterTesting

@testable import APNsChannel

/// Helpers shared by the APNs suites.
enum APNsTestSupport {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    static let scriptsDirectory = testsDirectory.appendingPathComponent("Scripts")
    static let vectorsDirectory = testsDirectory.appendingPathComponent("Vectors/apns")

    /// A temporary directory, removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// A fresh P-256 key written as a `.p8` (PKCS#8 PEM) file.
    static func writeP8(in dir: URL) throws -> (P256PrivateKey, String) {
        let key = try P256PrivateKey()
        let path = dir.appendingPathComponent("AuthKey_TESTKEY123.p8").path
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: path))
        return (key, path)
    }

    /// Builds a ChannelConfig from a YAML mapping text (the channel's body).
    static func config(_ yaml: String, name: String = "apns") throws -> ChannelConfig {
        guard let node = try YAMLParser.parse(yaml) else { throw TestFailure("empty YAML") }
        return try ChannelConfig(
            name: name, node: ConfigNode(yaml: node, file: "herald.yaml", environment: [:], baseDirectory: "/tmp"),
            ignoring: ["type"])
    }

    /// A context on `http` with the given fakes.
    static func context(
        http: any HTTPTransport, clock: ManualClock = ManualClock(), sink: RecordingLogSink = RecordingLogSink(),
        state: InMemoryChannelState = InMemoryChannelState(), random: any RandomSource = FixedRandom()
    ) -> ChannelContext {
        ChannelContext(
            name: "apns", http: http, clock: clock, random: random,
            logger: ChannelLogger(source: "apns", sink: sink, clock: clock), state: state)
    }

    /// An `ios` device.
    static func device(
        _ id: String, token: String, environment: String? = nil, pushKey: [UInt8]? = nil
    ) -> Device {
        var fields: [String: JSONValue] = ["token": .string(token)]
        if let environment { fields["environment"] = .string(environment) }
        if let pushKey { fields["pushKey"] = .string(Base64.encode(pushKey)) }
        return Device(deviceId: id, platform: "ios", fields: fields)
    }

    /// A target with a UUID delivery id.
    static func target(_ device: Device, deliveryId: String = UUID().uuidString.lowercased()) -> DeliveryTarget {
        DeliveryTarget(device: device, deliveryId: deliveryId)
    }

    /// Apple's documented `apns-id` form: a canonical lower-case UUID (protocols/apns.md).
    static let apnsIDPattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

    /// Whether the whole of `text` matches the regular expression `pattern`.
    static func matches(_ text: String, _ pattern: String) -> Bool {
        guard let regex = try? Regex(pattern) else { return false }
        return text.wholeMatch(of: regex) != nil
    }

    /// Runs python3 with a script from `Scripts/`; returns stdout, throws with stderr on failure.
    static func python(_ script: String, _ arguments: [String], stdin: String? = nil) throws -> String {
        let r = try Subprocess.run(
            executable: "python3", arguments: [scriptsDirectory.appendingPathComponent(script).path] + arguments,
            stdin: stdin)
        guard r.code == 0 else { throw TestFailure("\(script) failed: \(r.stderr)") }
        return r.stdout
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
