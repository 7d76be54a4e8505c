import ChannelAPI
import Foundation
import Router
import Testing

@testable import HeraldServer

/// The event log read once for every stream: a stream gets exactly the entries after its position,
/// from memory or (older than the window) from the store, and callers woken together read the
/// store once.
@Suite struct EventLogTailTests {
    static func insert(_ store: SQLiteStore, _ id: String, namespace: String = "default") throws {
        let n = try HeraldNotification(json: ["id": .string(id), "namespace": .string(namespace), "title": "t"])
        try store.insertNotification(n, steps: [], deliveries: [], now: Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func streamsGetExactlyTheEntriesAfterTheirPosition() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        try Self.insert(store, "before")
        let tail = try EventLogTail(store: store, capacity: 3)
        for i in 1...10 { try Self.insert(store, "n\(i)", namespace: i % 2 == 0 ? "even" : "odd") }

        // Older than the window (it keeps the newest 3): read from the store, nothing skipped.
        let all = try tail.entries(after: 0, namespaces: nil, limit: 100, generation: 1)
        #expect(all.map(\.sequence) == Array(1...11))
        // Within the window: from memory, the same entries the store has.
        let recent = try tail.entries(after: 9, namespaces: nil, limit: 100, generation: 1)
        #expect(recent == (try store.eventLog(after: 9, namespaces: nil, limit: 100)))
        #expect(recent.map(\.sequence) == [10, 11])
        // A namespace filter and a limit, as the store applies them.
        let even = try tail.entries(after: 8, namespaces: ["even"], limit: 100, generation: 1)
        #expect(even.map(\.notificationId) == ["n8", "n10"])
        #expect(try tail.entries(after: 8, namespaces: nil, limit: 1, generation: 1).map(\.sequence) == [9])
    }

    @Test func callersOfOneGenerationReadTheStoreOnce() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        let tail = try EventLogTail(store: store)
        try Self.insert(store, "a")
        #expect(try tail.entries(after: 0, namespaces: nil, limit: 10, generation: 1, maxAge: .seconds(60)).count == 1)
        // Written since, but the same generation (no new router event) and a fresh window: not read yet.
        try Self.insert(store, "b")
        #expect(try tail.entries(after: 0, namespaces: nil, limit: 10, generation: 1, maxAge: .seconds(60)).count == 1)
        // The next generation reads it.
        #expect(try tail.entries(after: 0, namespaces: nil, limit: 10, generation: 2, maxAge: .seconds(60)).count == 2)
        // So does age alone (what another process wrote raises no signal here).
        try Self.insert(store, "c")
        #expect(try tail.entries(after: 0, namespaces: nil, limit: 10, generation: 2, maxAge: .zero).count == 3)
    }
}
