import ChannelAPI
import Foundation
import HeraldSync

/// The apps' open streams in this process (`GET /v1/devices/{deviceId}/stream`) and the pushes
/// waiting for their confirmation: the in-process ``LocalStreams`` the `local` channel delivers
/// through. `herald serve` attaches a stream's writer when an app connects and detaches it when the
/// connection closes; a `received` event naming the device confirms. Time comes from the injected
/// clock (the confirm window). With a ``LocalStreamRelay`` (PostgreSQL), a device whose stream
/// another process holds is reached through it (``LocalStreamHub+Relay``).
public final class LocalStreamHub: LocalStreams {
    /// A device's identity: its namespace and id.
    public struct DeviceKey: Hashable, Sendable {
        /// The namespace.
        public var namespace: String
        /// The device id.
        public var deviceId: String

        /// Creates a key.
        public init(namespace: String, deviceId: String) {
            self.namespace = namespace
            self.deviceId = deviceId
        }
    }

    /// One connected device, for the console.
    public struct Connection: Sendable, Equatable {
        /// The device.
        public var device: DeviceKey
        /// Its open streams.
        public var streams: Int
        /// When its oldest open stream connected.
        public var since: Date
    }

    struct Stream {
        var device: DeviceKey
        var since: Date
        var write: @Sendable (LocalPush) -> Bool
    }

    struct Waiter {
        var push: LocalPush
        var streams: Set<UInt64>
        var sentAt: Date
        var resume: CheckedContinuation<LocalPushOutcome, Never>
        var timer: Task<Void, Never>?
    }

    struct State {
        var nextId: UInt64 = 0
        var streams: [UInt64: Stream] = [:]
        var byDevice: [DeviceKey: Set<UInt64>] = [:]
        var waiters = WaiterTable()
        var stats = LocalStreamStats()
        /// Pushes of other processes written to streams held here, by delivery id.
        var forwarded: [String: Forwarded] = [:]
        var relayStarted = false
        var closed = false
    }

    let clock: any HeraldClock
    let state = Locked(State())
    let relay: (any LocalStreamRelay)?

    /// A hub on `clock`; `relay` reaches the streams other processes hold (nil: this process only).
    public init(clock: any HeraldClock, relay: (any LocalStreamRelay)? = nil) {
        self.clock = clock
        self.relay = relay
    }

    // MARK: Streams (the server's side)

    /// Adds a stream of `device`; `write` sends one push down it (false: the stream is gone).
    /// Returns the stream's id for ``detach(_:)``.
    public func attach(_ device: DeviceKey, write: @escaping @Sendable (LocalPush) -> Bool) -> UInt64 {
        let now = clock.now()
        let (id, first) = state.withLock { s in
            s.nextId += 1
            s.streams[s.nextId] = Stream(device: device, since: now, write: write)
            let first = s.byDevice[device] == nil
            s.byDevice[device, default: []].insert(s.nextId)
            return (s.nextId, first)
        }
        if first, let relay {
            startRelay()
            try? relay.hold([device], now: now)
        }
        return id
    }

    /// Removes a stream: every push written to it (and to no other open stream of its device) that
    /// waits for its confirmation ends ``LocalPushOutcome/streamClosed`` at once.
    public func detach(_ id: UInt64) {
        let (closed, gone, forwarded) = state.withLock {
            s -> ([CheckedContinuation<LocalPushOutcome, Never>], DeviceKey?, [String]) in
            guard let stream = s.streams.removeValue(forKey: id) else { return ([], nil, []) }
            s.byDevice[stream.device]?.remove(id)
            var gone: DeviceKey?
            if s.byDevice[stream.device]?.isEmpty == true {
                s.byDevice[stream.device] = nil
                gone = stream.device
            }
            let forwarded = s.dropForwarded(stream: id)
            var out: [CheckedContinuation<LocalPushOutcome, Never>] = []
            for key in s.waiters.keys(onStream: id) {
                guard var w = s.waiters[key] else { continue }
                w.streams.remove(id)
                if w.streams.isEmpty {
                    s.waiters[key] = nil
                    w.timer?.cancel()
                    s.stats.count(.streamClosed)
                    out.append(w.resume)
                } else {
                    s.waiters[key] = w
                }
            }
            return (out, gone, forwarded)
        }
        for r in closed { r.resume(returning: .streamClosed) }
        if let relay {
            for key in forwarded { try? relay.send(.closed(deliveryId: key, outcome: .streamClosed)) }
            if let gone { try? relay.release(gone) }
        }
    }

    /// How many streams `device` holds open.
    public func streamCount(_ device: DeviceKey) -> Int { state.withLock { $0.byDevice[device]?.count ?? 0 } }

    /// Every device with an open stream, by namespace and id.
    public var connections: [Connection] {
        state.withLock { s in
            s.byDevice.map { device, ids in
                Connection(
                    device: device, streams: ids.count,
                    since: ids.compactMap { s.streams[$0]?.since }.min() ?? Date(timeIntervalSince1970: 0))
            }.sorted { ($0.device.namespace, $0.device.deviceId) < ($1.device.namespace, $1.device.deviceId) }
        }
    }

    /// Counters for `GET /metrics`: open streams, outcomes, confirm latency.
    public var stats: LocalStreamStats {
        state.withLock { s in
            var stats = s.stats
            stats.streams = s.streams.count
            return stats
        }
    }

    // MARK: Confirmations

    /// The app of `deviceId` confirmed `notificationId` (a `received` event): the pushes of that
    /// notification to that device waiting here end ``LocalPushOutcome/confirmed``. Returns how
    /// many did; 0 for a confirmation that comes late (after the fallback) or for a push another
    /// process delivers.
    @discardableResult
    public func confirm(namespace: String, notificationId: String, deviceId: String) -> Int {
        let done = confirmHere(namespace: namespace, notificationId: notificationId, deviceId: deviceId)
        // The push may wait in another process: tell every process.
        if done == 0, let relay {
            try? relay.send(.confirm(namespace: namespace, notificationId: notificationId, deviceId: deviceId))
        }
        return done
    }

    /// Confirms the pushes waiting in this process (and forgets those forwarded to its streams).
    func confirmHere(namespace: String, notificationId: String, deviceId: String) -> Int {
        let now = clock.now()
        let done: [CheckedContinuation<LocalPushOutcome, Never>] = state.withLock { s in
            var out: [CheckedContinuation<LocalPushOutcome, Never>] = []
            for (key, f) in s.forwarded
            where f.push.notificationId == notificationId && f.push.namespace == namespace
                && f.push.deviceId == deviceId
            {
                s.forwarded[key] = nil
            }
            let confirm = ConfirmKey(namespace: namespace, notificationId: notificationId, deviceId: deviceId)
            for key in s.waiters.keys(confirmedBy: confirm) {
                guard let w = s.waiters.removeValue(forKey: key) else { continue }
                w.timer?.cancel()
                s.stats.count(.confirmed)
                s.stats.observeConfirm(seconds: max(0, now.timeIntervalSince(w.sentAt)))
                out.append(w.resume)
            }
            return out
        }
        for r in done { r.resume(returning: .confirmed) }
        return done.count
    }

    // MARK: Pushes (the channel's side)

    /// Writes `push` to every open stream of its device and waits for the confirmation, the
    /// streams' closing or `confirmWithin`, whichever comes first.
    public func push(_ push: LocalPush, confirmWithin: Duration) async -> LocalPushOutcome {
        let device = DeviceKey(namespace: push.namespace, deviceId: push.deviceId)
        let key = push.deliveryId
        let clock = self.clock
        var remote: String?
        if streamCount(device) == 0, let relay {
            startRelay()
            let fresh = clock.now().addingTimeInterval(-LocalStreamHub.staleAfter.timeInterval)
            guard let holder = try? relay.holder(of: device, freshSince: fresh) else {
                state.withLock { $0.stats.count(.notConnected) }
                return .notConnected
            }
            remote = holder
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<LocalPushOutcome, Never>) in
                // Registered (with its continuation) before the first write, so a confirmation
                // however quick, or a stream closing at once, finds it.
                let (writers, replaced) = state.withLock {
                    s -> ([(UInt64, @Sendable (LocalPush) -> Bool)], CheckedContinuation<LocalPushOutcome, Never>?) in
                    let ids = (s.byDevice[device] ?? []).sorted()
                    guard !ids.isEmpty || remote != nil else {
                        s.stats.count(.notConnected)
                        return ([], nil)
                    }
                    let old = s.waiters.removeValue(forKey: key)
                    old?.timer?.cancel()
                    s.waiters[key] = Waiter(push: push, streams: Set(ids), sentAt: clock.now(), resume: c)
                    return (ids.compactMap { id in s.streams[id].map { (id, $0.write) } }, old?.resume)
                }
                replaced?.resume(returning: .notConfirmed)
                if let remote, let relay {
                    do { try relay.send(.push(holder: remote, push)) } catch { finish(key, .notConnected) }
                } else if writers.isEmpty {
                    return c.resume(returning: .notConnected)
                }
                var failed: [UInt64] = []
                for (id, write) in writers where !write(push) { failed.append(id) }
                for id in failed { drop(key, stream: id) }
                let timer = Task {
                    try? await clock.sleep(for: confirmWithin)
                    if !Task.isCancelled { self.finish(key, .notConfirmed) }
                }
                let waiting = state.withLock { s in
                    guard s.waiters[key] != nil else { return false }
                    s.waiters[key]?.timer = timer
                    return true
                }
                if !waiting { timer.cancel() }
            }
        } onCancel: {
            self.finish(key, .notConfirmed)
        }
    }

    /// The stream `id` refused the write of the push `key`: it ends ``LocalPushOutcome/streamClosed``
    /// when no other stream of its device took it.
    func drop(_ key: String, stream id: UInt64) {
        let r: CheckedContinuation<LocalPushOutcome, Never>? = state.withLock { s in
            guard var w = s.waiters[key] else { return nil }
            w.streams.remove(id)
            guard w.streams.isEmpty else {
                s.waiters[key] = w
                return nil
            }
            s.waiters[key] = nil
            w.timer?.cancel()
            s.stats.count(.streamClosed)
            return w.resume
        }
        r?.resume(returning: .streamClosed)
    }

    /// Ends the push `key` with `outcome` if it still waits.
    func finish(_ key: String, _ outcome: LocalPushOutcome) {
        let r: CheckedContinuation<LocalPushOutcome, Never>? = state.withLock { s in
            guard let w = s.waiters.removeValue(forKey: key) else { return nil }
            w.timer?.cancel()
            s.stats.count(outcome)
            return w.resume
        }
        r?.resume(returning: outcome)
    }
}
