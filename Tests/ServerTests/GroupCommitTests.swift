import ChannelAPI
import Foundation
import HeraldSync
import Router
import RouterTesting
import Testing

@testable import HeraldServer

/// Group commit of accepted sends (`wait=none`) and registrations, over real HTTP on 127.0.0.1: a
/// store whose commits can be held shows which requests shared a commit and when each was answered.
@Suite(.serialized) struct GroupCommitTests {
    static func notification(_ id: String, namespace: String = "default") -> String {
        #"{"id":"\#(id)","namespace":"\#(namespace)","title":"hi"}"#
    }

    /// Runs `body` with a harness over a ``HeldStore``, stopping it afterwards.
    static func withHeldServer(_ body: (ServerHarness, HeldStore) async throws -> Void) async throws {
        let (router, fcm, home) = try await ServerHarness.makeRouter(store: { try HeldStore(path: $0) })
        let store = try #require(router.store as? HeldStore)
        let server = try HeraldServer(router: router, server: ServerHarness.defaults)
        let h = ServerHarness(router: router, server: server, fcm: fcm, home: home)
        do {
            try await body(h, store)
        } catch {
            store.release()
            await h.stop()
            throw error
        }
        store.release()
        await h.stop()
    }

    /// Starts one request per body at once, each on a thread of its own (a blocked dispatch queue
    /// adds threads too slowly for 40 requests held at once); returns their tasks.
    static func post(
        _ h: ServerHarness, _ path: String, _ bodies: [String]
    ) -> [Task<RawResponse, any Error>] {
        let port = h.port
        return bodies.map { body in
            Task {
                try await withCheckedThrowingContinuation { c in
                    Thread {
                        c.resume(
                            with: Result {
                                let connection = try RawConnection(port: port, timeout: 60)
                                let head =
                                    "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                    + "Authorization: Bearer \(ServerHarness.admin)\r\n"
                                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                                try connection.send(Array((head + body).utf8))
                                return try connection.readResponse(head: false)
                            })
                    }.start()
                }
            }
        }
    }

    /// Waits (up to 10 s) until `condition` holds.
    static func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    }

    @Test func concurrentSendsShareOneCommitAndEachIsAnsweredAfterIt() async throws {
        try await Self.withHeldServer { h, store in
            // The first send's commit is held: the 40 sends arriving meanwhile wait for the next one.
            store.hold()
            let first = Self.post(h, "/v1/notifications?wait=none", [Self.notification("gc-0")])
            try await Self.until { store.entered == 1 }
            let ids = (1...40).map { "gc-\($0)" }
            let rest = Self.post(h, "/v1/notifications?wait=none", ids.map { Self.notification($0) })
            try await Self.until { h.server.api.accepts.waitingCount == ids.count }
            // Nothing is answered while its commit has not happened.
            try await Task.sleep(for: .milliseconds(100))
            #expect(store.committed.isEmpty)
            store.release()
            for (task, id) in zip(first + rest, ["gc-0"] + ids) {
                let r = try await task.value
                #expect(r.status == 202, "\(r.text)")
                #expect(r.json?["id"] as? String == id)
                #expect(r.headers["herald-replayed"] == nil)
                // Answered only after the commit that holds its rows.
                #expect(store.committed.contains(id))
            }
            // Two commits: the lone first send, then the 40 that arrived while it was held.
            #expect(store.batches.map(\.count) == [1, 40])
            // Each stored exactly once, with its deliveries and one `notification` event-log entry.
            let planned = try #require(try await first[0].value.json?["planned"] as? Int)
            for id in ["gc-0"] + ids {
                #expect(try store.notification(id: id) != nil)
                #expect(try store.deliveries(notificationId: id).count == planned)
            }
            let log = try store.eventLog(after: 0, namespaces: nil, limit: 1000).filter { $0.kind == "notification" }
            #expect(log.count == 41)
            #expect(Set(log.map(\.notificationId)).count == 41)
        }
    }

    @Test func aDuplicateInsideOneBatchIsAReplayAnotherNamespacesIsItsOwnAndTheOthersCommit() async throws {
        try await Self.withHeldServer { h, store in
            store.hold()
            let filler = Self.post(h, "/v1/notifications?wait=none", [Self.notification("dup-filler")])
            try await Self.until { store.entered == 1 }
            // One batch, in this order: a, a again (same namespace: a replay), a in another namespace
            // (ids are unique per namespace: its own notification, under a scoped key), b.
            var tasks: [Task<RawResponse, any Error>] = []
            for (n, body) in [
                Self.notification("dup-a"), Self.notification("dup-a"), Self.notification("dup-a", namespace: "team-x"),
                Self.notification("dup-b"),
            ].enumerated() {
                tasks += Self.post(h, "/v1/notifications?wait=none", [body])
                try await Self.until { h.server.api.accepts.waitingCount == n + 1 }
            }
            store.release()
            #expect(try await filler[0].value.status == 202)
            let answers = try await tasks.asyncMap { try await $0.value }
            #expect(answers[0].status == 202)
            #expect(answers[0].headers["herald-replayed"] == nil)
            #expect(answers[1].status == 202, "\(answers[1].text)")
            #expect(answers[1].headers["herald-replayed"] == "true")
            #expect(answers[1].json?["planned"] as? Int == answers[0].json?["planned"] as? Int)
            #expect(answers[2].status == 202, "\(answers[2].text)")
            #expect(answers[2].headers["herald-replayed"] == nil)
            #expect(answers[2].json?["id"] as? String == "dup-a")
            #expect(answers[2].json?["namespace"] as? String == "team-x")
            #expect(answers[3].status == 202)
            #expect(answers[3].headers["herald-replayed"] == nil)
            // One commit for the four, the repeated ids never reaching the store (the first a wins);
            // then one for team-x's a under its scoped key.
            #expect(store.batches.map(\.count) == [1, 2, 1])
            #expect(store.batches.dropFirst().first == ["dup-a", "dup-b"])
            #expect(store.batches.last == [NotificationKey.scoped("dup-a", namespace: "team-x")])
            // a is stored once (in default), with one event-log entry; b too.
            #expect(try store.notification(id: "dup-a")?.notification.namespace == "default")
            #expect(try store.deliveries(notificationId: "dup-a").count == answers[0].json?["planned"] as? Int)
            let log = try store.eventLog(after: 0, namespaces: nil, limit: 100).filter { $0.kind == "notification" }
            #expect(
                log.map(\.notificationId).sorted()
                    == ["dup-a", NotificationKey.scoped("dup-a", namespace: "team-x"), "dup-b", "dup-filler"])
            // The event stream's data shows the client's id for both.
            #expect(
                log.filter { $0.data["notificationId"] == "dup-a" }.map(\.namespace).sorted() == ["default", "team-x"])
        }
    }

    @Test func aFailedCommitFailsOnlyItsOwnBatch() async throws {
        try await Self.withHeldServer { h, store in
            store.hold()
            let filler = Self.post(h, "/v1/notifications?wait=none", [Self.notification("fail-filler")])
            try await Self.until { store.entered == 1 }
            let doomed = Self.post(
                h, "/v1/notifications?wait=none", [Self.notification("fail-x"), Self.notification("fail-y")])
            try await Self.until { h.server.api.accepts.waitingCount == 2 }
            store.failBatch(2)
            store.release()
            #expect(try await filler[0].value.status == 202)
            for task in doomed {
                let r = try await task.value
                // The documented answer for a store that cannot be written: 503 unavailable.
                #expect(r.status == 503, "\(r.text)")
                #expect(r.errorCode == "unavailable")
            }
            #expect(try store.notification(id: "fail-x") == nil)
            #expect(try store.notification(id: "fail-y") == nil)
            // The next batch commits again.
            let later = try await h.request("POST", "/v1/notifications?wait=none", json: Self.notification("fail-x"))
            #expect(later.status == 202)
            #expect(later.headers["herald-replayed"] == nil)
            #expect(try store.notification(id: "fail-x") != nil)
        }
    }

    @Test func registrationsShareOneCommitAndAnInvalidDeviceFailsAlone() async throws {
        try await Self.withHeldServer { h, store in
            store.hold()
            let first = Self.post(h, "/v1/devices", [#"{"deviceId":"r0","platform":"phone","token":"tok-r0"}"#])
            try await Self.until { store.entered == 1 }
            let bodies = (1...20).map { #"{"deviceId":"r\#($0)","platform":"phone","token":"tok-r\#($0)"}"# }
            let rest = Self.post(h, "/v1/devices", bodies)
            // A device without its token is refused before it reaches the batch.
            let invalid = Self.post(h, "/v1/devices", [#"{"deviceId":"bad","platform":"phone"}"#])
            try await Self.until { h.server.api.registrations.waitingCount == bodies.count }
            let refused = try await invalid[0].value
            #expect(refused.status == 422)
            #expect(refused.errorCode == "invalid_device")
            // One device of the held batch fails in the store: it alone gets its error.
            store.failDevice("r7")
            store.release()
            for (n, task) in (first + rest).enumerated() {
                let r = try await task.value
                if n == 7 {
                    #expect(r.status == 503, "\(r.text)")
                    #expect(r.errorCode == "unavailable")
                } else {
                    #expect(r.status == 200, "\(r.text)")
                    #expect(r.json?["created"] as? Bool == true)
                    #expect(store.committedDevices.contains("r\(n)"))
                }
            }
            #expect(store.deviceBatches.map(\.count) == [1, 20])
            let stored = Set(try store.devices(namespace: "default").map(\.deviceId))
            #expect(stored == Set((0...20).filter { $0 != 7 }.map { "r\($0)" }))
        }
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for e in self { out.append(try await transform(e)) }
        return out
    }
}

/// A real SQLite store whose notification and device commits can be held (to gather a batch), made
/// to fail (a whole batch, or one device of a batch), and which records every commit's items and
/// what has been committed. Every other call goes to the SQLite store unchanged.
final class HeldStore: HeraldStore {
    struct State {
        var held = false
        var entered = 0
        var batches: [[String]] = []
        var deviceBatches: [[String]] = []
        var committed: Set<String> = []
        var committedDevices: Set<String> = []
        var failingBatch: Int?
        var failingDevice: String?
    }

    let base: SQLiteStore
    private let state = Locked(State())

    init(path: String) throws { base = try SQLiteStore(path: path) }

    func hold() { state.withLock { $0.held = true } }
    func release() { state.withLock { $0.held = false } }
    /// The batch with this 1-based number fails as a whole (the store cannot be written).
    func failBatch(_ number: Int) { state.withLock { $0.failingBatch = number } }
    func failDevice(_ id: String) { state.withLock { $0.failingDevice = id } }
    var entered: Int { state.withLock { $0.entered } }
    var batches: [[String]] { state.withLock { $0.batches } }
    var deviceBatches: [[String]] { state.withLock { $0.deviceBatches } }
    var committed: Set<String> { state.withLock { $0.committed } }
    var committedDevices: Set<String> { state.withLock { $0.committedDevices } }

    /// Counts a commit of `ids` and waits while commits are held; returns the commit's number.
    private func enter(_ ids: [String], devices: Bool) -> Int {
        let number = state.withLock { s -> Int in
            s.entered += 1
            if devices { s.deviceBatches.append(ids) } else { s.batches.append(ids) }
            return s.entered
        }
        while state.withLock({ $0.held }) { usleep(1000) }
        return number
    }

    func insertNotifications(
        _ items: [NotificationInsert], now: Date, suppressed: (DeliveryRecord) -> Void
    ) throws -> [Result<Int, any Error>] {
        let number = enter(items.map(\.notification.id), devices: false)
        if state.withLock({ $0.failingBatch == number }) {
            throw StoreError.writeFailed(operation: "store notifications", detail: "disk full (test)")
        }
        let results = try base.insertNotifications(items, now: now, suppressed: suppressed)
        state.withLock { s in
            for (item, r) in zip(items, results) where (try? r.get()) != nil {
                s.committed.insert(item.notification.id)
            }
        }
        return results
    }

    func insertNotification(
        _ notification: HeraldNotification, steps: [StepRule], deliveries: [DeliveryRecord], now: Date
    ) throws {
        let number = enter([notification.id], devices: false)
        if state.withLock({ $0.failingBatch == number }) {
            throw StoreError.writeFailed(operation: "store notifications", detail: "disk full (test)")
        }
        try base.insertNotification(notification, steps: steps, deliveries: deliveries, now: now)
        _ = state.withLock { $0.committed.insert(notification.id) }
    }

    func upsertDevicesIndividually(_ devices: [Device], now: Date) throws -> [Result<UpsertResult, any Error>] {
        _ = enter(devices.map(\.deviceId), devices: true)
        let failing = state.withLock { $0.failingDevice }
        let kept = devices.filter { $0.deviceId != failing }
        var stored = try base.upsertDevicesIndividually(kept, now: now).makeIterator()
        let results: [Result<UpsertResult, any Error>] = devices.map { d in
            d.deviceId == failing
                ? .failure(StoreError.writeFailed(operation: "register a device", detail: "disk full (test)"))
                : (stored.next() ?? .failure(StoreError.corrupt("missing result")))
        }
        state.withLock { s in
            for (d, r) in zip(devices, results) where (try? r.get()) != nil { s.committedDevices.insert(d.deviceId) }
        }
        return results
    }

    func upsertDevice(_ device: Device, now: Date) throws -> UpsertResult {
        _ = enter([device.deviceId], devices: true)
        if state.withLock({ $0.failingDevice == device.deviceId }) {
            throw StoreError.writeFailed(operation: "register a device", detail: "disk full (test)")
        }
        let r = try base.upsertDevice(device, now: now)
        _ = state.withLock { $0.committedDevices.insert(device.deviceId) }
        return r
    }

    func upsertDevices(_ devices: [Device], now: Date) throws -> [UpsertResult] {
        try base.upsertDevices(devices, now: now)
    }
    func removeDevice(namespace: String, deviceId: String, platform: String?) throws -> Int {
        try base.removeDevice(namespace: namespace, deviceId: deviceId, platform: platform)
    }
    func removeDevice(namespace: String, address: String) throws -> Int {
        try base.removeDevice(namespace: namespace, address: address)
    }
    func devices(namespace: String?) throws -> [Device] { try base.devices(namespace: namespace) }
    func device(namespace: String, deviceId: String, platform: String) throws -> Device? {
        try base.device(namespace: namespace, deviceId: deviceId, platform: platform)
    }
    /// Called once after the next `notification(id:)` read has been answered (a write slipping in
    /// between two reads of a request); cleared as it runs.
    let afterNextNotificationRead = Locked<(@Sendable (SQLiteStore) throws -> Void)?>(nil)

    func notification(id: String) throws -> StoredNotification? {
        let answer = try base.notification(id: id)
        if let hook = afterNextNotificationRead.withLock({ h -> (@Sendable (SQLiteStore) throws -> Void)? in
            defer { h = nil }
            return h
        }) {
            try hook(base)
        }
        return answer
    }
    func deliveries(notificationId: String) throws -> [DeliveryRecord] {
        try base.deliveries(notificationId: notificationId)
    }
    func claimPending(notificationId: String, step: Int, channel: String, owner: String, until: Date, now: Date) throws
        -> [DeliveryRecord]
    {
        try base.claimPending(
            notificationId: notificationId, step: step, channel: channel, owner: owner, until: until, now: now)
    }
    func claimDue(owner: String, until: Date, now: Date, limit: Int) throws -> [DeliveryRecord] {
        try base.claimDue(owner: owner, until: until, now: now, limit: limit)
    }
    func suppress(deliveryIds: [String], reason: String, now: Date) throws {
        try base.suppress(deliveryIds: deliveryIds, reason: reason, now: now)
    }
    func record(_ attempts: [AttemptRecord], now: Date) throws -> [Device] { try base.record(attempts, now: now) }
    func notificationsWithPendingDeliveries(now: Date) throws -> [String] {
        try base.notificationsWithPendingDeliveries(now: now)
    }
    func releaseLeases(ownedBy owners: [String]) throws { try base.releaseLeases(ownedBy: owners) }
    func renewLeases(owner: String, deliveryIds: [String], until: Date) throws {
        try base.renewLeases(owner: owner, deliveryIds: deliveryIds, until: until)
    }
    func leaseOwners() throws -> [String] { try base.leaseOwners() }
    func nextDueTime() throws -> Date? { try base.nextDueTime() }
    func deliveryCounts() throws -> [DeliveryState: Int] { try base.deliveryCounts() }
    func recordEvent(_ event: LifecycleEvent) throws -> LifecycleEvent { try base.recordEvent(event) }
    func events(notificationId: String) throws -> [LifecycleEvent] { try base.events(notificationId: notificationId) }
    func history(namespace: String?, id: String?, limit: Int) throws -> [HistoryEntry] {
        try base.history(namespace: namespace, id: id, limit: limit)
    }
    func purge(before date: Date) throws -> Int { try base.purge(before: date) }
    func channelState(_ channel: String) -> any ChannelStateStore { base.channelState(channel) }
    func addBadgeTag(namespace: String, tag: String, now: Date) throws {
        try base.addBadgeTag(namespace: namespace, tag: tag, now: now)
    }
    func pendingTagCount(namespace: String) throws -> Int { try base.pendingTagCount(namespace: namespace) }
    func clearBadge(namespace: String) throws { try base.clearBadge(namespace: namespace) }
    func touchCooldowns(namespace: String, tag: String, keys: [(key: String, window: Duration)], now: Date) throws
        -> Set<String>
    {
        try base.touchCooldowns(namespace: namespace, tag: tag, keys: keys, now: now)
    }
    func eventLog(after: Int64, namespaces: [String]?, limit: Int) throws -> [EventLogEntry] {
        try base.eventLog(after: after, namespaces: namespaces, limit: limit)
    }
    func lastEventSequence() throws -> Int64 { try base.lastEventSequence() }
}
