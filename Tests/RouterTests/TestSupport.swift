import ChannelAPI
import Foundation
import HeraldChannels
import Router
import RouterTesting
import Testing

/// A router over recording channels: `apns` (ios), `fcm` (phone, wear), `webpush` (web),
/// `telegram` (telegram) and `sink` (a sink), each its own recorder.
struct Harness {
    let router: Router
    let apns: RecordingChannel
    let fcm: RecordingChannel
    let webpush: RecordingChannel
    let telegram: RecordingChannel
    let sink: RecordingChannel
    let clock: ManualClock
    let storePath: String
    let registry: ChannelRegistry

    static let channelsYAML = """
        channels:
          apns: { type: rec-apns }
          fcm: { type: rec-fcm }
          webpush: { type: rec-webpush }
          telegram: { type: rec-telegram }
          sink: { type: rec-sink }
        """

    /// `storePath` is an SQLite file or a PostgreSQL URL (the `storePath` of an earlier harness, to
    /// reopen its store); without one, `store` picks a new SQLite file or a fresh PostgreSQL database.
    static func make(
        routes: String, channels: String = Harness.channelsYAML, store: StoreKind = .sqlite, storePath: String? = nil,
        clock: ManualClock = ManualClock()
    ) async throws -> Harness {
        let apns = RecordingChannel()
        let fcm = RecordingChannel()
        let webpush = RecordingChannel()
        let telegram = RecordingChannel()
        let sink = RecordingChannel()
        var registry = try ChannelRegistry([
            apns.factory(type: "rec-apns", platforms: ["ios"]),
            fcm.factory(type: "rec-fcm", platforms: ["phone", "wear"]),
            webpush.factory(type: "rec-webpush", platforms: ["web"]),
            telegram.factory(type: "rec-telegram", platforms: ["telegram"]),
            sink.factory(type: "rec-sink", platforms: []),
        ])
        // The recording channels stand in for the built-in ones: the built-in modules declare the platforms.
        for p in HeraldChannels.registry.platforms { try registry.register(platform: p) }
        let path = try storePath ?? store.newLocation()
        let storeLine = path.hasPrefix("postgresql://") ? "store: { url: \"\(path)\" }" : "store: { path: \(path) }"
        let text = "version: 1\n\(storeLine)\n" + channels + "\n" + routes
        let config = try ConfigLoader.parse(text, registry: registry)
        let router = try await Router(
            config: config, registry: registry,
            options: RouterOptions(clock: clock, random: FixedRandom(), logSink: RecordingLogSink()))
        return Harness(
            router: router, apns: apns, fcm: fcm, webpush: webpush, telegram: telegram, sink: sink, clock: clock,
            storePath: path, registry: registry)
    }

    static func tempPath() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("herald.db").path
    }

    func register(_ platform: String, _ id: String, namespace: String = "default", token: String? = nil) async throws {
        var fields: [String: JSONValue] = [:]
        switch platform {
        case "ios": fields["token"] = .string(token ?? String(repeating: "ab", count: 32))
        case "phone", "wear": fields["token"] = .string(token ?? "fcm-\(id)")
        case "web":
            fields["subscription"] = [
                "endpoint": .string("https://push.example.net/\(token ?? id)"),
                "keys": ["p256dh": "BAAA", "auth": "AAAA"],
            ]
        case "telegram": fields["chatId"] = .number(Double(abs(id.hashValue % 100000)))
        default: break
        }
        try await router.register(Device(namespace: namespace, deviceId: id, platform: platform, fields: fields))
    }
}

extension DeliveryReport {
    func outcome(_ channel: String, _ device: String? = nil) -> DeliveryState? {
        deliveries.first { $0.channel == channel && (device == nil || $0.deviceId == device) }?.state
    }
}

/// The stores the parameterised store tests run against (`@Test(arguments: StoreKind.allCases)`).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// A new, empty store's location: an SQLite file path or the URL of a fresh PostgreSQL database
    /// on the test server (started on first use).
    func newLocation() throws -> String {
        switch self {
        case .sqlite: Harness.tempPath()
        case .postgres: try TestPostgres.start().createDatabase()
        }
    }

    /// Opens a new, empty store of this kind.
    func open(clock: any HeraldClock = SystemClock()) throws -> any HeraldStore {
        switch self {
        case .sqlite: try SQLiteStore(path: Harness.tempPath(), clock: clock)
        case .postgres: try PostgresStore(url: try TestPostgres.start().createDatabase(), clock: clock)
        }
    }

    /// Opens the store at `location` (from ``newLocation()``) again, as another process would.
    func open(_ location: String, clock: any HeraldClock = SystemClock()) throws -> any HeraldStore {
        switch self {
        case .sqlite: try SQLiteStore(path: location, clock: clock)
        case .postgres: try PostgresStore(url: location, clock: clock)
        }
    }
}
