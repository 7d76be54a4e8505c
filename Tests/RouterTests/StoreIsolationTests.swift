import ChannelAPI
import Foundation
import RouterTesting
import Testing

@testable import Router

/// Issue 30, in the store (SQLite and PostgreSQL): a registration moves another namespace's
/// registration of the same address only when the address is a secret and the registrant covers
/// that namespace; history pages by keyset; the console's reads stay inside the caller's namespaces.
@Suite struct StoreIsolationTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func phone(_ ns: String, _ id: String, token: String, movable: [String]?) -> Device {
        var d = Device(
            namespace: ns, deviceId: id, platform: "phone", fields: ["token": .string(token)], address: token)
        d.movableNamespaces = movable
        return d
    }

    @Test func theClaimRuleOfEachCase() {
        var d = Self.phone("a", "x", token: "T", movable: ["a", "team-*"])
        #expect(AddressClaim.of(d, on: "a") == .move)
        #expect(AddressClaim.of(d, on: "team-1") == .move)
        #expect(AddressClaim.of(d, on: "b") == .refuse)
        // "team-*" covers names that start with "team-", not "team" itself.
        #expect(AddressClaim.of(d, on: "team") == .refuse)
        d.movableNamespaces = nil
        #expect(AddressClaim.of(d, on: "b") == .move)
        d.addressIsSecret = false
        #expect(AddressClaim.of(d, on: "b") == .keep)
        #expect(AddressClaim.of(d, on: "a") == .move)
    }

    @Test(arguments: StoreKind.allCases) func aForeignNamespacesSecretAddressIsNotMoved(store kind: StoreKind) throws {
        let store = try kind.open()
        _ = try store.upsertDevice(Self.phone("victim", "phone", token: "T", movable: nil), now: Self.t0)
        let attacker = Self.phone("attacker", "mine", token: "T", movable: ["attacker"])
        #expect(throws: AddressConflict(deviceId: "mine")) { try store.upsertDevice(attacker, now: Self.t0) }
        #expect(try store.devices(namespace: "victim").map(\.deviceId) == ["phone"])
        #expect(try store.devices(namespace: "attacker").isEmpty)
        // In a batch, the refused one fails alone and writes nothing.
        let results = try store.upsertDevicesIndividually(
            [attacker, Self.phone("attacker", "own", token: "U", movable: ["attacker"])], now: Self.t0)
        #expect(throws: AddressConflict.self) { try results[0].get() }
        #expect(try results[1].get() == UpsertResult(created: true, moved: []))
        #expect(
            try store.devices(namespace: nil).map { "\($0.namespace)/\($0.deviceId)" } == [
                "attacker/own", "victim/phone",
            ])
    }

    @Test(arguments: StoreKind.allCases) func aRegistrantCoveringBothNamespacesMovesIt(store kind: StoreKind) throws {
        let store = try kind.open()
        _ = try store.upsertDevice(Self.phone("team-a", "old", token: "T", movable: nil), now: Self.t0)
        let moved = try store.upsertDevice(
            Self.phone("home", "new", token: "T", movable: ["home", "team-*"]), now: Self.t0)
        #expect(moved == UpsertResult(created: true, moved: ["team-a/old/phone"]))
        #expect(try store.devices(namespace: nil).map { "\($0.namespace)/\($0.deviceId)" } == ["home/new"])
        // The CLI (no namespaces given) moves from anywhere: hapi's move-on-re-register.
        let cli = try store.upsertDevice(Self.phone("elsewhere", "cli", token: "T", movable: nil), now: Self.t0)
        #expect(cli.moved == ["home/new/phone"])
    }

    @Test(arguments: StoreKind.allCases) func anAddressThatIsNoSecretNeverMovesAcrossNamespaces(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        func chat(_ ns: String, _ id: String, movable: [String]?) -> Device {
            var d = Device(
                namespace: ns, deviceId: id, platform: "telegram", fields: ["chatId": 42], address: "telegram:42")
            d.addressIsSecret = false
            d.movableNamespaces = movable
            return d
        }
        _ = try store.upsertDevice(chat("a", "chat", movable: nil), now: Self.t0)
        // Neither a token covering only b nor the CLI moves a's registration: both stay.
        #expect(try store.upsertDevice(chat("b", "chat", movable: ["b"]), now: Self.t0).moved == [])
        #expect(try store.upsertDevice(chat("c", "chat", movable: nil), now: Self.t0).moved == [])
        #expect(try store.devices(namespace: nil).map(\.namespace) == ["a", "b", "c"])
        // Within its own namespace it still moves (one registration per chat in a namespace).
        #expect(try store.upsertDevice(chat("a", "renamed", movable: ["a"]), now: Self.t0).moved == ["a/chat/telegram"])
    }

    @Test(arguments: StoreKind.allCases) func aClientIdNamesItsKeysInEveryNamespace(store kind: StoreKind) throws {
        let store = try kind.open()
        try store.insertNotification(
            HeraldNotification(id: "x", namespace: "a", title: "t"), steps: [], deliveries: [], now: Self.t0)
        try store.insertNotification(
            HeraldNotification(id: NotificationKey.scoped("x", namespace: "b"), namespace: "b", title: "t"), steps: [],
            deliveries: [], now: Self.t0)
        try store.insertNotification(
            HeraldNotification(id: "xy", namespace: "c", title: "t"), steps: [], deliveries: [], now: Self.t0)
        let keys = try store.notificationKeys(publicID: "x").map { "\($0.namespace)=\($0.key)" }.sorted()
        #expect(keys == ["a=x", "b=x\u{1F}b"])
        #expect(try store.notificationKeys(publicID: "nope").isEmpty)
        // The stored notification keeps its key as its id; its history JSON shows the client's id.
        let entry = try #require(try store.history(namespace: "b", id: nil, limit: 1).first)
        #expect(entry.notification.id == "x\u{1F}b")
        #expect(entry.json["id"] == "x")
    }

    @Test(arguments: StoreKind.allCases) func historyPagesByKeyset(store kind: StoreKind) throws {
        let store = try kind.open()
        // Several notifications per millisecond, so the tie-break on insertion order is exercised.
        for i in 0..<25 {
            let at = Self.t0.addingTimeInterval(Double(i / 3))
            try store.insertNotification(
                HeraldNotification(id: "n\(i)", namespace: "mine", title: "t"), steps: [], deliveries: [], now: at)
            try store.insertNotification(
                HeraldNotification(id: "o\(i)", namespace: "theirs", title: "t"), steps: [], deliveries: [], now: at)
        }
        let newestFirst = try store.history(namespace: "mine", id: nil, limit: 100).map(\.notification.id)
        #expect(newestFirst.count == 25)
        var pages: [String] = []
        var cursor: String?
        repeat {
            let page: [String]
            if let c = cursor {
                page = try #require(try store.history(namespace: "mine", before: c, limit: 7)).map(\.notification.id)
            } else {
                page = try store.history(namespace: "mine", id: nil, limit: 7).map(\.notification.id)
            }
            pages += page
            cursor = page.count == 7 ? page.last : nil
        } while cursor != nil
        #expect(pages == newestFirst)
        // An id of another namespace is no cursor here, nor is an unknown one.
        #expect(try store.history(namespace: "mine", before: "o3", limit: 7) == nil)
        #expect(try store.history(namespace: "mine", before: "nope", limit: 7) == nil)
        // The keyset answer is the scanning default's.
        let scanned = try ScanningHistory(base: store).history(namespace: "mine", before: "n10", limit: 5)
        #expect(
            try store.history(namespace: "mine", before: "n10", limit: 5)?.map(\.notification.id)
                == scanned?.map(\.notification.id))
    }

    @Test(arguments: StoreKind.allCases) func namespacesAndOutstandingCountsAreReadPerNamespace(store kind: StoreKind)
        throws
    {
        let store = try kind.open()
        for (ns, id) in [
            ("alpha", "1"), ("alpha", "2"), ("beta", "1"), ("team-x", "1"), ("team_y", "1"), ("teamz", "1"),
        ] {
            _ = try store.upsertDevice(Self.phone(ns, id, token: "\(ns)-\(id)", movable: nil), now: Self.t0)
        }
        #expect(try store.deviceNamespaces(covering: ["alpha", "gamma"]) == ["alpha"])
        // `_` and `%` are no wildcards in a prefix.
        #expect(try store.deviceNamespaces(covering: ["team-*"]) == ["team-x"])
        #expect(try store.deviceNamespaces(covering: ["team_*"]) == ["team_y"])
        #expect(try store.deviceNamespaces(covering: ["*"]) == ["alpha", "beta", "team-x", "team_y", "teamz"])
        for (ns, state, n) in [("alpha", DeliveryState.pending, 2), ("alpha", .retry, 1), ("beta", .pending, 4)] {
            let note = HeraldNotification(id: "\(ns)-\(state)", namespace: ns, title: "t")
            let rows = (0..<n).map { i in
                DeliveryRecord(
                    id: "\(note.id)-\(i)", notificationId: note.id, step: 0, position: 0, channel: "sink",
                    deviceId: nil, platform: nil, state: state, nextAttemptAt: state == .retry ? Self.t0 : nil,
                    updatedAt: Self.t0)
            }
            try store.insertNotification(note, steps: [], deliveries: rows, now: Self.t0)
        }
        let counts = try store.outstandingCountsByNamespace()
        #expect(counts["alpha"]?.pending == 2)
        #expect(counts["alpha"]?.retry == 1)
        #expect(counts["beta"]?.pending == 4)
        #expect(counts["beta"]?.retry == 0)
        #expect(counts["gamma"] == nil)
    }
}

/// Forwards `history(namespace:id:limit:)` to a real store and keeps the protocol's scanning default
/// for `history(namespace:before:limit:)`: what the keyset reads are checked against.
struct ScanningHistory {
    let base: any HeraldStore

    func history(namespace: String, before: String, limit: Int) throws -> [HistoryEntry]? {
        var window = limit + 50
        while true {
            let all = try base.history(namespace: namespace, id: nil, limit: window)
            if let i = all.firstIndex(where: { $0.notification.id == before }) {
                return Array(all[(i + 1)...].prefix(limit))
            }
            guard all.count == window else { return nil }
            window *= 4
        }
    }
}
