import ChannelAPI
import Foundation
import Router

/// Issue 30, items 11 and 12: what two API reads cost in the store, before and after, in one run.
///
/// A fresh SQLite store holds `notifications` notifications in namespace `mine` (1 delivery each)
/// and `devices` devices in namespace `theirs`. It times, median of `rounds`:
/// - `GET /v1/notifications?before=ID` at the deepest page: the keyset read
///   (``HeraldStore/history(namespace:before:limit:)``) beside the growing windows the API read
///   before (every notification up to the cursor, each with its deliveries and events);
/// - the store reads of `GET /v1/summary` for a token covering only `mine`: the covered namespaces
///   and their outstanding counts, beside every device of the store and every delivery's state.
enum APIReadsBench {
    static func run(notifications: Int, devices: Int, rounds: Int) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SQLiteStore(path: dir.appendingPathComponent("herald.db").path)
        defer { store.close() }
        let t0 = Date(timeIntervalSince1970: 1_767_225_600)
        var oldest = ""
        for i in 0..<notifications {
            let n = HeraldNotification(id: "n\(i)", namespace: "mine", title: "t")
            let row = DeliveryRecord(
                id: "n\(i)-0", notificationId: n.id, step: 0, position: 0, channel: "sink", deviceId: nil,
                platform: nil, state: .delivered, updatedAt: t0)
            try store.insertNotification(
                n, steps: [], deliveries: [row], now: t0.addingTimeInterval(Double(i) / 1000))
            if i == 60 { oldest = n.id }
        }
        let batch = 1000
        var start = 0
        while start < devices {
            let chunk = (start..<min(devices, start + batch)).map { i in
                Device(
                    namespace: "theirs", deviceId: "d\(i)", platform: "phone", fields: ["token": .string("tok-\(i)")],
                    address: "tok-\(i)")
            }
            _ = try store.upsertDevices(chunk, now: t0)
            start += batch
        }
        func median(_ body: () throws -> Void) rethrows -> Double {
            var times: [Double] = []
            for _ in 0..<max(1, rounds) {
                let begin = DispatchTime.now().uptimeNanoseconds
                try body()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6)
            }
            return times.sorted()[times.count / 2]
        }
        var keysetCount = 0
        var scanCount = 0
        let keyset = try median {
            keysetCount = try store.history(namespace: "mine", before: oldest, limit: 50)?.count ?? -1
        }
        let scanned = try median {
            var window = 100
            while true {
                let all = try store.history(namespace: "mine", id: nil, limit: window)
                if let i = all.firstIndex(where: { $0.notification.id == oldest }) {
                    scanCount = all[(i + 1)...].prefix(50).count
                    break
                }
                guard all.count == window else { break }
                window *= 4
            }
        }
        let summaryNew = try median {
            _ = try store.deviceNamespaces(covering: ["mine"])
            _ = try store.outstandingCountsByNamespace()
        }
        let summaryOld = try median {
            _ = Set(try store.devices(namespace: nil).map(\.namespace))
            _ = try store.deliveryCounts()
        }
        return String(
            format:
                "api-reads notifications=%d devices=%d: before= deepest page keyset %.2f ms (%d rows), windows %.1f ms (%d rows); summary store reads covered %.2f ms, whole store %.1f ms",
            notifications, devices, keyset, keysetCount, scanned, scanCount, summaryNew, summaryOld)
    }
}
