import ChannelAPI

/// Matches a plugin's `deliver` answer to its batch: one ``DeliveryResult`` per target, whatever
/// the plugin sent. Pure.
///
/// A result whose `deliveryId` is not in the batch, a second result for the same delivery, or an
/// item of the wrong shape is refused (reported in ``problems``); a target without a usable result
/// gets `retry` with ``missingReason``, so a confused plugin loses nothing and mixes nothing up.
struct ExecBatch: Sendable {
    /// The reason of a target the plugin gave no usable result for.
    static let missingReason = "exec plugin gave no result for this delivery"

    /// One result per target, in the targets' order.
    var results: [DeliveryResult]
    /// What was refused, one sentence each, for the log.
    var problems: [ExecProtocolError]

    /// Every target of `targets` answered `retry` with `reason` (the plugin died, timed out, was busy).
    static func retryAll(_ targets: [DeliveryTarget], reason: String, retryAfter: Duration? = nil) -> [DeliveryResult] {
        targets.map { .retry($0, reason: reason, retryAfter: retryAfter) }
    }

    /// Reads `result` (the answer's `result` member: `{"results": [...]}`) for `targets`.
    init(result: JSONValue, targets: [DeliveryTarget]) {
        var index: [String: Int] = [:]
        index.reserveCapacity(targets.count)
        for (i, t) in targets.enumerated() { index[t.deliveryId] = i }
        var found: [DeliveryResult?] = Array(repeating: nil, count: targets.count)
        problems = []
        if let items = result["results"]?.arrayValue {
            for item in items {
                switch ExecBatch.read(item, targets: targets, index: index) {
                case .success(let (i, r)):
                    if found[i] != nil {
                        problems.append(
                            ExecProtocolError(
                                code: .unknownDelivery, message: "a second result for delivery \(r.deliveryId) refused")
                        )
                    } else {
                        found[i] = r
                    }
                case .failure(let e): problems.append(e)
                }
            }
        } else {
            problems.append(ExecProtocolError(code: .wrongShape, message: "a deliver result needs a \"results\" list"))
        }
        results = zip(targets, found).map { t, r in r ?? .retry(t, reason: ExecBatch.missingReason) }
    }

    /// One result item: its target's index and the result.
    static func read(_ item: JSONValue, targets: [DeliveryTarget], index: [String: Int]) -> Result<
        (Int, DeliveryResult), ExecProtocolError
    > {
        guard let id = item["deliveryId"]?.stringValue else {
            return .failure(ExecProtocolError(code: .wrongShape, message: "a result needs a string \"deliveryId\""))
        }
        guard let i = index[id] else {
            return .failure(
                ExecProtocolError(
                    code: .unknownDelivery, message: "a result for delivery \(id), which is not in the batch"))
        }
        guard let word = item["outcome"]?.stringValue, let outcome = DeliveryOutcome(rawValue: word),
            outcome != .suppressed
        else {
            return .failure(
                ExecProtocolError(
                    code: .wrongShape,
                    message: "the result for delivery \(id) needs an outcome of delivered, retry, failed or dead"))
        }
        var status: Int?
        if let s = item["status"], !s.isNull {
            guard let n = s.intValue, (100...599).contains(n) else {
                return .failure(
                    ExecProtocolError(code: .wrongShape, message: "the status of delivery \(id) must be 100-599"))
            }
            status = n
        }
        var retryAfter: Duration?
        if let a = item["retryAfter"], !a.isNull {
            guard let seconds = a.numberValue, seconds.isFinite, seconds >= 0 else {
                return .failure(
                    ExecProtocolError(code: .wrongShape, message: "retryAfter of delivery \(id) must be seconds >= 0"))
            }
            retryAfter = .milliseconds(Int64(clamping: min(seconds, 86_400) * 1000))
        }
        let target = targets[i]
        let reason = item["reason"]?.stringValue
        let providerId = item["providerMessageId"]?.stringValue
        var r: DeliveryResult
        switch outcome {
        case .delivered: r = .delivered(target, status: status, providerMessageId: providerId)
        case .retry:
            r = .retry(target, status: status, reason: reason ?? "exec plugin answered retry", retryAfter: retryAfter)
        case .failed: r = .failed(target, status: status, reason: reason ?? "exec plugin answered failed")
        case .dead, .suppressed: r = .dead(target, status: status, reason: reason ?? "exec plugin answered dead")
        }
        if outcome != .delivered { r.providerMessageId = providerId }
        return .success((i, r))
    }
}
