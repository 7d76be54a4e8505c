import ChannelAPI
import Foundation
import HeraldSQL

/// The one decoding layer of the SQL stores: each record is read from a row by one function,
/// whichever database the row came from (``SQLiteStore`` and ``PostgresStore`` keep the same
/// columns, with times as milliseconds since 1970). A row missing a required column is
/// ``StoreError/corrupt(_:)``.
extension SQLRow {
    /// The named column as a time (milliseconds since 1970), or `nil` unless it holds an integer.
    func date(_ column: String) -> Date? {
        int(column).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// A `devices` row.
    func device() throws -> Device {
        guard let ns = string("namespace"), let id = string("device_id"), let p = string("platform"),
            let f = string("fields"), let fields = try? JSONValue.parse(f).objectValue
        else { throw StoreError.corrupt("device row") }
        return Device(namespace: ns, deviceId: id, platform: p, fields: fields, address: string("address"))
    }

    /// The key columns of a `devices` row (empty strings where one is missing).
    func deviceKey() -> DeviceKey {
        DeviceKey(
            namespace: string("namespace") ?? "", deviceId: string("device_id") ?? "",
            platform: string("platform") ?? "")
    }

    /// A `deliveries` row.
    func delivery() throws -> DeliveryRecord {
        guard let id = string("id"), let nid = string("notification_id"), let step = int("step"),
            let pos = int("position"), let channel = string("channel"),
            let state = string("state").flatMap(DeliveryState.init(rawValue:)), let updated = date("updated_at")
        else { throw StoreError.corrupt("delivery row") }
        return DeliveryRecord(
            id: id, notificationId: nid, step: Int(step), position: Int(pos), channel: channel,
            deviceId: string("device_id"), platform: string("platform"), state: state,
            attempts: Int(int("attempts") ?? 0), nextAttemptAt: date("next_attempt_at"),
            status: int("status").map { Int($0) }, reason: string("reason"),
            providerMessageId: string("provider_id"), updatedAt: updated)
    }

    /// The `body`, `steps` and `created_at` columns of a `notifications` row (each name after
    /// `prefix`, for a row that joins them to a delivery); `id` names it in the error.
    func storedNotification(id: String, prefix: String = "") throws -> StoredNotification {
        guard let body = string(prefix + "body"), let n = try? HeraldNotification(storedJSONText: body),
            let at = date(prefix + "created_at"), let stepsText = string(prefix + "steps"),
            let steps = StepRule.list(parsing: stepsText)
        else { throw StoreError.corrupt("notification \(id)") }
        return StoredNotification(notification: n, createdAt: at, steps: steps)
    }

    /// An `events` row of notification `notificationId`.
    func lifecycleEvent(notificationId: String) throws -> LifecycleEvent {
        guard let kind = string("kind").flatMap(ChannelEvent.Kind.init(rawValue:)), let at = date("at")
        else { throw StoreError.corrupt("event row") }
        var data: [String: String] = [:]
        if let d = string("action_data"), let o = try? JSONValue.parse(d).objectValue {
            for (k, v) in o { data[k] = v.stringValue ?? "" }
        }
        let event = ChannelEvent(
            notificationId: notificationId, kind: kind, actionId: string("action_id"), actionData: data,
            deviceId: string("device_id"))
        return LifecycleEvent(id: int("id") ?? 0, event: event, at: at)
    }

    /// An `event_log` row.
    func eventLogEntry() throws -> EventLogEntry {
        guard let seq = int("sequence"), let ns = string("namespace"), let kind = string("kind"),
            let nid = string("notification_id"), let text = string("data"), let data = try? JSONValue.parse(text),
            let at = date("created_at")
        else { throw StoreError.corrupt("event log row") }
        return EventLogEntry(sequence: seq, namespace: ns, kind: kind, notificationId: nid, data: data, createdAt: at)
    }
}

/// What the SQL stores build from rows of several records: the same on every database.
enum StoreRows {
    /// Counts by state from `state, n` rows (`GROUP BY state`).
    static func deliveryCounts(_ rows: [SQLRow]) -> [DeliveryState: Int] {
        var out: [DeliveryState: Int] = [:]
        for row in rows {
            if let s = row.string("state").flatMap(DeliveryState.init(rawValue:)) { out[s] = Int(row.int("n") ?? 0) }
        }
        return out
    }

    /// Outstanding counts by namespace from `namespace, state, c` rows.
    static func outstandingByNamespace(_ rows: [SQLRow]) -> [String: (pending: Int, retry: Int)] {
        var out: [String: (pending: Int, retry: Int)] = [:]
        for row in rows {
            guard let ns = row.string("namespace") else { continue }
            var c = out[ns] ?? (0, 0)
            let n = Int(row.int("c") ?? 0)
            if row.string("state") == "pending" { c.pending = n } else { c.retry = n }
            out[ns] = c
        }
        return out
    }

    /// Device counts by platform from `platform, n` rows.
    static func platformCounts(_ rows: [SQLRow]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in rows {
            if let p = row.string("platform"), let n = row.int("n") { counts[p] = Int(n) }
        }
        return counts
    }

    /// `(key, namespace)` pairs from `id, namespace` rows.
    static func notificationKeys(_ rows: [SQLRow]) -> [(key: String, namespace: String)] {
        rows.compactMap { row in row.string("id").flatMap { id in row.string("namespace").map { (id, $0) } } }
    }

    /// The `pending` and `retry` counts of a `p, r` row.
    static func outstanding(_ row: SQLRow?) -> (pending: Int, retry: Int) {
        (Int(row?.int("p") ?? 0), Int(row?.int("r") ?? 0))
    }
}

extension AttemptRecord {
    /// The stored text of ``details`` (canonical JSON), or `nil` when there are none.
    var detailsText: String? {
        details.isEmpty ? nil : JSONValue.object(details.mapValues { .string($0) }).canonicalString
    }
}

extension LifecycleEvent {
    /// The stored text of the event's `actionData` (canonical JSON), or `nil` when there is none.
    var actionDataText: String? {
        event.actionData.isEmpty ? nil : JSONValue.object(event.actionData.mapValues { .string($0) }).canonicalString
    }
}

extension HeraldStore {
    /// The history entry of each stored notification of `ids`, in order (a missing one is skipped).
    func historyEntries(ids: [String]) throws -> [HistoryEntry] {
        try ids.compactMap { nid -> HistoryEntry? in
            guard let stored = try notification(id: nid) else { return nil }
            return HistoryEntry(
                notification: stored.notification, createdAt: stored.createdAt,
                deliveries: try deliveries(notificationId: nid), events: try events(notificationId: nid))
        }
    }
}
