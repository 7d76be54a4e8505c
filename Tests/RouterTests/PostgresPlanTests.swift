import ChannelAPI
import Foundation
import HeraldPostgres
import RouterTesting
import Testing

@testable import Router

/// Issue 18: the outbox's hot statements keep index plans whatever the table's statistics say.
///
/// The outbox is filled and never analysed, as after a large fan-out between two autovacuum runs.
/// Without ``PostgresStore/keyedAccess`` PostgreSQL then sorted every pending row for each claim
/// and hashed the whole table for each record, so each batch cost time in proportion to the outbox.
@Suite struct PostgresPlanTests {
    /// Every plan node (its type and relation) of an `EXPLAIN (FORMAT JSON)` answer.
    static func nodes(_ plan: JSONValue) -> [(type: String, relation: String?)] {
        var out: [(String, String?)] = []
        func walk(_ node: JSONValue) {
            if case .string(let type)? = node["Node Type"] {
                if case .string(let relation)? = node["Relation Name"] {
                    out.append((type, relation))
                } else {
                    out.append((type, nil))
                }
            }
            if case .array(let children)? = node["Plans"] { children.forEach(walk) }
        }
        if case .array(let top) = plan {
            for entry in top { if let p = entry["Plan"] { walk(p) } }
        }
        return out
    }

    /// The plan of `sql`, with the keyed settings before it or without them.
    static func plan(_ db: PostgresDatabase, _ sql: PostgresSQL, keyed: Bool) throws -> [(
        type: String, relation: String?
    )] {
        let explain: PostgresSQL = "EXPLAIN (FORMAT JSON) \(sql)"
        let rows = try db.pipeline(keyed ? [PostgresStore.keyedAccess, explain] : [explain])
        let text = try #require(rows.last?.first?.string("QUERY PLAN"))
        return nodes(try JSONValue.parse(text))
    }

    /// Node types a statement over a batch of keyed rows must not use.
    static let scans: Set<String> = ["Seq Scan", "Bitmap Heap Scan", "Hash Join", "Merge Join"]

    @Test func theClaimAndTheRecordUseIndexesOnAnUnanalysedOutbox() async throws {
        let store = try PostgresStore(url: try TestPostgres.start().createDatabase())
        defer { store.close() }
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let rows = (0..<3_000).map { i in
            DeliveryRecord(
                id: String(format: "d%05d", i), notificationId: "n", step: 0, position: 0, channel: "sink",
                deviceId: "dev\(i)", platform: "phone", state: .pending, updatedAt: now)
        }
        try store.insertNotification(
            HeraldNotification(id: "n", title: "t"), steps: [StepRule(mode: .all, unlessDelivered: nil, timeout: nil)],
            deliveries: rows, now: now)

        let claim = PostgresStore.claimBatchStatement(
            owner: "w", until: now.addingTimeInterval(60), now: now, limit: 125)
        let claimPlan = try Self.plan(store.db, claim, keyed: true)
        #expect(claimPlan.contains { $0.type == "Index Scan" && $0.relation == "deliveries" })
        #expect(!claimPlan.contains { Self.scans.contains($0.type) || $0.type == "Sort" }, "\(claimPlan)")

        let batch = rows.prefix(125).map { AttemptRecord(deliveryId: $0.id, attempt: 1, state: .delivered) }
        let record = PostgresStore.recordStatements(Array(batch), at: 1)
        for statement in record.list where !statement.text.hasPrefix("SELECT pg_advisory") {
            let plan = try Self.plan(store.db, statement, keyed: true)
            #expect(!plan.contains { Self.scans.contains($0.type) }, "\(statement.text.prefix(60)): \(plan)")
        }

        // The guard is needed: without it the same statements plan scans of the whole outbox.
        let unguarded = try Self.plan(store.db, claim, keyed: false)
        let recordUnguarded = try record.list.filter { !$0.text.hasPrefix("SELECT pg_advisory") }.map {
            try Self.plan(store.db, $0, keyed: false)
        }
        #expect(
            unguarded.contains { Self.scans.contains($0.type) || $0.type == "Sort" }
                || recordUnguarded.contains { $0.contains { Self.scans.contains($0.type) } })
    }
}
