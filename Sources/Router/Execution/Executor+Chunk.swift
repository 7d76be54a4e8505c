import ChannelAPI
import Foundation

extension Executor {
    /// Delivers one chunk (one notification, one channel) and decides its attempt records, not yet
    /// stored. The one chunk path of both the per-notification attempt and the batched drain.
    ///
    /// Devices are resolved from `devices` (read now, not at planning): a re-registration since
    /// planning (new token) is honoured, and a device unregistered since then is `failed`. Results
    /// are matched back by delivery id; a target the channel returned nothing for is a `retry`, and
    /// one cut off by the call's bound is a `retry` "timed out", while the real answers it did
    /// return are kept.
    ///
    /// The channel's timeout is per request: every HTTP request the call makes gets it, cut to what
    /// is left of `deadline`. The call as a whole gets a generous outer bound; when it is hit the
    /// call is cancelled.
    func deliverChunk(
        _ chunk: [DeliveryRecord], channel: any Channel, spec: ChannelSpec, notification: HeraldNotification,
        pendingBadge: Int?, deadline: Date?, devices: [String: Device], expiresAt: Date?
    ) async -> [AttemptRecord] {
        var targets: [DeliveryTarget] = []
        var byKey: [String: (DeliveryRecord, Device?)] = [:]
        var attempts: [AttemptRecord] = []
        for r in chunk {
            if let deviceId = r.deviceId, let platform = r.platform {
                guard let device = devices[Executor.key(deviceId, platform)] else {
                    attempts.append(
                        AttemptRecord(
                            deliveryId: r.id, attempt: r.attempts, state: .failed,
                            reason: "device is no longer registered"))
                    continue
                }
                targets.append(DeliveryTarget(device: device, deliveryId: r.id, attempt: r.attempts + 1))
                byKey[r.id] = (r, device)
            } else {
                targets.append(DeliveryTarget(device: nil, deliveryId: r.id, attempt: r.attempts + 1))
                byKey[r.id] = (r, nil)
            }
        }
        var timeout = min(spec.timeout, Executor.longestBound)
        var left: Duration?
        if let deadline {
            let remaining = max(Executor.duration(seconds: deadline.timeIntervalSince(clock.now())), .milliseconds(1))
            left = remaining
            timeout = min(timeout, remaining)
        }
        let margin = Executor.margin(requestTimeout: timeout)
        var bound = Executor.callBound(requestTimeout: timeout, targets: targets.count)
        if let left { bound = min(bound, left + margin) }
        var results: [DeliveryResult] = []
        var timedOut = false
        if !targets.isEmpty {
            let request = DeliveryRequest(notification: notification, targets: targets, pendingBadge: pendingBadge)
            (results, timedOut) = await Executor.deliver(
                requestTimeout: timeout, bound: bound, grace: margin, { await channel.deliver(request) })
            if timedOut {
                // Keep real answers; what the cancellation itself produced becomes "timed out" below.
                results = results.filter { $0.outcome == .delivered || $0.outcome == .dead || $0.status != nil }
            }
        }
        let now = clock.now()
        var seen: Set<String> = []
        for result in results {
            let k = result.deliveryId
            guard let (record, device) = byKey[k], !seen.contains(k) else { continue }
            seen.insert(k)
            attempts.append(
                attemptRecord(for: result, record: record, device: device, spec: spec, expiresAt: expiresAt, now: now))
        }
        for (k, (record, device)) in byKey where !seen.contains(k) {
            let reason =
                timedOut ? "timed out after \(bound.milliseconds)ms" : "channel returned no result for this device"
            let synthetic = DeliveryResult(
                deliveryId: record.id, deviceId: record.deviceId, platform: record.platform, outcome: .retry,
                reason: reason)
            attempts.append(
                attemptRecord(
                    for: synthetic, record: record, device: device, spec: spec, expiresAt: expiresAt, now: now))
        }
        return attempts
    }
}
