import ChannelAPI
import Foundation
import HeraldPostgres
import HeraldSync

/// Local push across `herald serve` processes on one PostgreSQL: table `local_streams` (device,
/// holder, heartbeat) says which process holds a device's stream, and `NOTIFY herald_local` carries
/// pushes to the holder and confirmations and closings back (``LocalRelayMessage`` as JSON).
final class PostgresLocalRelay: LocalStreamRelay {
    /// The `LISTEN`/`NOTIFY` channel.
    static let channel = "herald_local"
    /// The largest message `NOTIFY` carries (PostgreSQL's limit is 8000 bytes).
    static let maximumMessage = 7_900

    let db: PostgresDatabase
    let holder: String
    let listener: PostgresListener?

    init(db: PostgresDatabase, holder: String) {
        self.db = db
        self.holder = holder
        listener = try? PostgresListener(database: db, channel: PostgresLocalRelay.channel)
    }

    func hold(_ devices: [LocalStreamHub.DeviceKey], now: Date) throws {
        let at = now.millisecondsSince1970
        for d in devices {
            _ = try db.run(
                """
                INSERT INTO local_streams(namespace, device_id, holder, heartbeat_at) \
                VALUES(\(d.namespace), \(d.deviceId), \(holder), \(at)) \
                ON CONFLICT (namespace, device_id, holder) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at
                """)
        }
    }

    func release(_ device: LocalStreamHub.DeviceKey) throws {
        _ = try db.run(
            """
            DELETE FROM local_streams WHERE namespace = \(device.namespace) AND device_id = \(device.deviceId) \
            AND holder = \(holder)
            """)
    }

    func holder(of device: LocalStreamHub.DeviceKey, freshSince: Date) throws -> String? {
        try db.queryOne(
            """
            SELECT holder FROM local_streams WHERE namespace = \(device.namespace) \
            AND device_id = \(device.deviceId) AND holder <> \(holder) \
            AND heartbeat_at >= \(freshSince.millisecondsSince1970) ORDER BY heartbeat_at DESC LIMIT 1
            """)?.string("holder")
    }

    func send(_ message: LocalRelayMessage) throws {
        let text = message.json.canonicalString
        guard text.utf8.count <= PostgresLocalRelay.maximumMessage else {
            throw PostgresError(sqlState: nil, call: "NOTIFY", message: "a local push over 7900 bytes")
        }
        _ = try db.run("SELECT pg_notify(\(PostgresLocalRelay.channel), \(text))")
    }

    func receive(timeout: Duration) throws -> [LocalRelayMessage] {
        guard let listener else {
            Thread.sleep(forTimeInterval: timeout.timeInterval)
            return []
        }
        return try listener.wait(timeout: timeout).compactMap { payload in
            (try? JSONValue.parse(Array(payload.utf8))).flatMap(LocalRelayMessage.init(json:))
        }
    }

    func close() {
        _ = try? db.run("DELETE FROM local_streams WHERE holder = \(holder)")
        listener?.close()
    }
}

extension PostgresStore {
    /// The relay of local push for this store's processes, under a new holder name.
    func localRelay() -> any LocalStreamRelay {
        PostgresLocalRelay(db: db, holder: "\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
    }
}
