import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// Issue 19 on PostgreSQL: `send` persists a fan-out through the server-side expansion of its outbox
/// groups, then delivers every row once.
@Suite struct PostgresFanoutTests {
    /// 1,234 phones: the rows are one version-7 id series numbered by PostgreSQL in device order,
    /// and each is sent and recorded once.
    @Test func aSendOnPostgreSQLStoresOneSeriesAndDeliversEachRowOnce() async throws {
        let store = try PostgresStore(url: try TestPostgres.start().createDatabase())
        defer { store.close() }
        let (router, fcm) = try await StreamingFanoutTests.router(
            store: store, path: Harness.tempPath(), devices: 1_234)
        let summary = try await router.sendSummarized(HeraldNotification(id: "series", title: "t"))
        #expect(summary.counts == [.delivered: 1_234])
        var rows: [DeliveryRecord] = []
        try router.forEachDelivery(of: "series") { rows.append($0) }
        #expect(rows.map { $0.deviceId ?? "" } == (0..<1_234).map { String(format: "p%05d", $0) })
        let first = try #require(rows.first?.id)
        let prefix = String(first.prefix(24))
        let base = try #require(Int64(first.suffix(12), radix: 16)) - 1
        for (k, row) in rows.enumerated() {
            #expect(row.id == UUIDGenerator.seriesMember(prefix: prefix, base: base, Int64(k + 1)))
            #expect(UUID(uuidString: row.id) != nil)
        }
        let sent = fcm.targets.map(\.deliveryId)
        #expect(sent.count == 1_234)
        #expect(Set(sent) == Set(rows.map(\.id)))
        let log = try store.eventLog(after: 0, namespaces: ["default"], limit: 10)
        #expect(log.first?.kind == "notification")
        #expect(log.first?.data["planned"] == .number(1_234))
        await router.shutdown()
    }
}
