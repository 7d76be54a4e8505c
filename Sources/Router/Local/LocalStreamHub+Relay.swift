import ChannelAPI
import Foundation

/// Local push across processes: the hub's side of a ``LocalStreamRelay``. A process that holds a
/// device's stream notes it in the relay (and renews the note every ``heartbeat``); a process that
/// delivers to a device it holds no stream of asks the relay which process does, sends it the push,
/// and waits as for its own streams: the holder writes the push to its streams and sends back a
/// closing (`stream closed`, `not connected`), while a confirmation, wherever it is posted, is sent
/// to every process.
extension LocalStreamHub {
    /// How often a holder renews its note of the streams it holds.
    static let heartbeat: Duration = .seconds(10)
    /// A note not renewed for this long is a holder that is gone: its devices are not connected.
    static let staleAfter: Duration = .seconds(30)
    /// How long a push forwarded to a stream here is remembered (past any confirm window).
    static let forwardedFor: TimeInterval = 60

    /// A push of another process written to streams of this one.
    struct Forwarded {
        var push: LocalPush
        var streams: Set<UInt64>
        var at: Date
    }

    /// Starts receiving the relay's messages (once): listens first, so nothing sent after this
    /// returns is missed, then reads on a thread of its own and renews this process's notes.
    func startRelay() {
        guard let relay else { return }
        let start = state.withLock { s in
            guard !s.relayStarted, !s.closed else { return false }
            s.relayStarted = true
            return true
        }
        guard start else { return }
        for m in (try? relay.receive(timeout: .zero)) ?? [] { handle(m) }
        Thread.detachNewThread { [weak self] in
            var lastBeat = ContinuousClock.now
            while let hub = self, !hub.state.withLock({ $0.closed }) {
                do {
                    for m in try relay.receive(timeout: .seconds(1)) { hub.handle(m) }
                } catch {
                    Thread.sleep(forTimeInterval: 1)
                }
                if ContinuousClock.now - lastBeat >= LocalStreamHub.heartbeat {
                    lastBeat = .now
                    let held = hub.state.withLock { Array($0.byDevice.keys) }
                    if !held.isEmpty { try? relay.hold(held, now: hub.clock.now()) }
                }
            }
        }
    }

    /// Stops receiving and forgets this process's notes (the router's shutdown).
    public func close() {
        let wasStarted = state.withLock { s in
            s.closed = true
            return s.relayStarted
        }
        if wasStarted { relay?.close() }
    }

    /// Acts on one message of another process.
    func handle(_ message: LocalRelayMessage) {
        switch message {
        case .push(let holder, let push):
            guard holder == relay?.holder else { return }
            forward(push)
        case .confirm(let namespace, let notificationId, let deviceId):
            _ = confirmHere(namespace: namespace, notificationId: notificationId, deviceId: deviceId)
        case .closed(let deliveryId, let outcome):
            finish(deliveryId, outcome)
        }
    }

    /// Writes another process's push to this process's streams of its device; answers a closing
    /// when there are none or every write fails.
    func forward(_ push: LocalPush) {
        let device = DeviceKey(namespace: push.namespace, deviceId: push.deviceId)
        let now = clock.now()
        let writers: [(UInt64, @Sendable (LocalPush) -> Bool)] = state.withLock { s in
            let ids = (s.byDevice[device] ?? []).sorted()
            guard !ids.isEmpty else { return [] }
            s.forwarded = s.forwarded.filter { now.timeIntervalSince($0.value.at) < LocalStreamHub.forwardedFor }
            s.forwarded[push.deliveryId] = Forwarded(push: push, streams: Set(ids), at: now)
            return ids.compactMap { id in s.streams[id].map { (id, $0.write) } }
        }
        guard !writers.isEmpty else {
            try? relay?.send(.closed(deliveryId: push.deliveryId, outcome: .notConnected))
            return
        }
        let failed = writers.filter { !$0.1(push) }.map(\.0)
        guard !failed.isEmpty else { return }
        let gone: Bool = state.withLock { s in
            guard var f = s.forwarded[push.deliveryId] else { return false }
            f.streams.subtract(failed)
            s.forwarded[push.deliveryId] = f.streams.isEmpty ? nil : f
            return f.streams.isEmpty
        }
        if gone { try? relay?.send(.closed(deliveryId: push.deliveryId, outcome: .streamClosed)) }
    }
}

extension LocalStreamHub.State {
    /// Removes stream `id` from the forwarded pushes; returns those it was the last stream of.
    mutating func dropForwarded(stream id: UInt64) -> [String] {
        var ended: [String] = []
        for (key, var f) in forwarded where f.streams.contains(id) {
            f.streams.remove(id)
            if f.streams.isEmpty {
                forwarded[key] = nil
                ended.append(key)
            } else {
                forwarded[key] = f
            }
        }
        return ended
    }
}
