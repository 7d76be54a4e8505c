import ChannelAPI
import Foundation

/// Pulse Relay's client-side budgets, decided over one JSON document per (device, source) kept in
/// the state store (pure; the sender applies it inside `state.update`, so limits hold across
/// processes):
///
/// - at most 600 pushes per hour per (device, source);
/// - at most 4 starts per hour per (device, source), and 1 start per ref per 30 s;
/// - at most 1 update per second per ref;
/// - an alert on update/end at most once per 30 s per ref (over that the alert is dropped and the
///   push still goes out).
///
/// Document: `{"sends":[ms…],"starts":[ms…],"refs":{"<ref>":{"u":ms,"s":ms,"a":ms}}}`.
enum PulseLimits {
    static let hour: Int64 = 3_600_000
    static let maxPerHour = 600
    static let maxStartsPerHour = 4
    static let startSpacing: Int64 = 30_000
    static let updateSpacing: Int64 = 1_000
    static let alertSpacing: Int64 = 30_000

    /// What the budget allows.
    enum Decision: Equatable {
        /// Send; `dropAlert` when the alert limit was hit.
        case send(dropAlert: Bool)
        /// Wait this long before trying again.
        case wait(Duration)
    }

    /// Applies one push to `document`; returns the new document (the push recorded when allowed).
    static func reserve(
        _ document: JSONValue?, event: String, ref: String, hasAlert: Bool, now: Int64
    ) -> (document: JSONValue, decision: Decision) {
        let o = document?.objectValue ?? [:]
        func times(_ v: JSONValue?) -> [Int64] {
            (v?.arrayValue ?? []).compactMap { $0.intValue.map(Int64.init) }.filter { now - $0 < hour }
        }
        var sends = times(o["sends"])
        var starts = times(o["starts"])
        var refs: [String: [String: JSONValue]] = [:]
        for (k, v) in o["refs"]?.objectValue ?? [:] {
            guard let entry = v.objectValue else { continue }
            let recent = entry.filter { ($0.value.intValue.map(Int64.init) ?? 0) > now - hour }
            if !recent.isEmpty { refs[k] = recent }
        }
        var entry = refs[ref] ?? [:]
        func last(_ k: String) -> Int64? { entry[k]?.intValue.map(Int64.init) }
        func encode() -> JSONValue {
            .object([
                "sends": .array(sends.map { .number(Double($0)) }),
                "starts": .array(starts.map { .number(Double($0)) }),
                "refs": .object(refs.mapValues { .object($0) }),
            ])
        }
        func wait(_ until: Int64) -> (JSONValue, Decision) { (encode(), .wait(.milliseconds(max(1, until - now)))) }

        if sends.count >= maxPerHour, let first = sends.min() { return wait(first + hour) }
        switch event {
        case "start":
            if starts.count >= maxStartsPerHour, let first = starts.min() { return wait(first + hour) }
            if let s = last("s"), now - s < startSpacing { return wait(s + startSpacing) }
        case "update":
            if let u = last("u"), now - u < updateSpacing { return wait(u + updateSpacing) }
        default:
            break
        }
        var dropAlert = false
        if hasAlert {
            if event != "start", let a = last("a"), now - a < alertSpacing {
                dropAlert = true
            } else {
                entry["a"] = .number(Double(now))
            }
        }
        sends.append(now)
        if event == "start" {
            starts.append(now)
            entry["s"] = .number(Double(now))
        }
        if event == "update" { entry["u"] = .number(Double(now)) }
        refs[ref] = entry
        return (encode(), .send(dropAlert: dropAlert))
    }
}
