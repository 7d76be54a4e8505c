import Foundation
import HeraldSync
import Router

/// The counters and histograms of `GET /metrics` (http-api.md §5), rendered in the Prometheus text
/// exposition format 0.0.4. Labels are bounded: channel, outcome, platform, route pattern, code.
public final class ServerMetrics: Sendable {
    /// Histogram bucket bounds in seconds.
    public static let buckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    struct Histogram {
        var counts = [Int](repeating: 0, count: ServerMetrics.buckets.count)
        var sum = 0.0
        var count = 0

        mutating func observe(_ v: Double) {
            for (i, b) in ServerMetrics.buckets.enumerated() where v <= b { counts[i] += 1 }
            sum += v
            count += 1
        }
    }

    struct State {
        var notifications = 0
        var deliveries: [LabelPair: Int] = [:]
        var deliveryDurations: [String: Histogram] = [:]
        var requests: [LabelPair: Int] = [:]
        var requestDurations: [String: Histogram] = [:]
    }

    struct LabelPair: Hashable {
        let a: String
        let b: String
    }

    private let state = Locked(State())
    /// The relay counters (docs/relay-server.md).
    public let relays = RelayMetrics()

    /// Creates empty metrics.
    public init() {}

    /// A notification was accepted (stored, not a replay).
    public func countNotification() { state.withLock { $0.notifications += 1 } }

    /// A delivery reached an outcome; `seconds` since it was planned.
    public func countDelivery(channel: String, outcome: String, seconds: Double?) {
        state.withLock { s in
            s.deliveries[LabelPair(a: channel, b: outcome), default: 0] += 1
            if let seconds, seconds.isFinite, seconds >= 0 {
                s.deliveryDurations[channel, default: Histogram()].observe(seconds)
            }
        }
    }

    /// An HTTP request was answered.
    public func countRequest(route: String, code: Int, seconds: Double) {
        state.withLock { s in
            s.requests[LabelPair(a: route, b: String(code)), default: 0] += 1
            s.requestDurations[route, default: Histogram()].observe(seconds)
        }
    }

    /// Seconds between a delivery's planning (the time in its version-7 UUID) and `at`.
    public static func secondsSincePlanned(deliveryId: String, at: Date) -> Double? {
        let hex = deliveryId.replacingOccurrences(of: "-", with: "")
        guard hex.count == 32, Array(hex.utf8)[12] == UInt8(ascii: "7"), let ms = UInt64(hex.prefix(12), radix: 16)
        else { return nil }
        return at.timeIntervalSince1970 - Double(ms) / 1000
    }

    /// The exposition text; `pending` and `devices` are read from the store by the caller.
    public func render(outboxPending: Int, devicesByPlatform: [String: Int]) -> String {
        let s = state.withLock { $0 }
        var out = Self.family("herald_notifications_total", "Notifications accepted through the API.", "counter")
        out += "herald_notifications_total \(s.notifications)\n"
        out += Self.family("herald_deliveries_total", "Deliveries that reached an outcome.", "counter")
        out += Self.counters("herald_deliveries_total", labels: ("channel", "outcome"), s.deliveries)
        out += Self.family(
            "herald_delivery_duration_seconds", "Time from planning to a delivery's outcome.", "histogram")
        out += Self.histograms("herald_delivery_duration_seconds", label: "channel", s.deliveryDurations)
        out += Self.family("herald_outbox_pending", "Deliveries pending or waiting for a retry.", "gauge")
        out += "herald_outbox_pending \(outboxPending)\n"
        out += Self.family("herald_devices", "Registered devices.", "gauge")
        for (platform, n) in devicesByPlatform.sorted(by: { $0.key < $1.key }) {
            out += "herald_devices{platform=\"\(Self.escape(platform))\"} \(n)\n"
        }
        out += Self.family("herald_http_requests_total", "HTTP requests answered.", "counter")
        out += Self.counters("herald_http_requests_total", labels: ("route", "code"), s.requests)
        out += Self.family("herald_http_request_duration_seconds", "Time to answer an HTTP request.", "histogram")
        out += Self.histograms("herald_http_request_duration_seconds", label: "route", s.requestDurations)
        return out + relays.render()
    }

    /// The `# HELP` and `# TYPE` lines of a metric family.
    static func family(_ name: String, _ help: String, _ type: String) -> String {
        "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    /// A counter per label pair, sorted by the pair.
    static func counters(_ name: String, labels: (String, String), _ counts: [LabelPair: Int]) -> String {
        counts.sorted { ($0.key.a, $0.key.b) < ($1.key.a, $1.key.b) }.map { k, v in
            "\(name){\(labels.0)=\"\(escape(k.a))\",\(labels.1)=\"\(escape(k.b))\"} \(v)\n"
        }.joined()
    }

    /// A histogram per label value, sorted by the value.
    static func histograms(_ name: String, label: String, _ histograms: [String: Histogram]) -> String {
        histograms.sorted { $0.key < $1.key }.map { histogram(name, label: label, value: $0.key, $0.value) }.joined()
    }

    static func histogram(_ name: String, label: String, value: String, _ h: Histogram) -> String {
        var out = ""
        let l = "\(label)=\"\(escape(value))\""
        for (i, b) in buckets.enumerated() {
            out += "\(name)_bucket{\(l),le=\"\(format(b))\"} \(h.counts[i])\n"
        }
        out += "\(name)_bucket{\(l),le=\"+Inf\"} \(h.count)\n"
        out += "\(name)_sum{\(l)} \(format(h.sum))\n"
        out += "\(name)_count{\(l)} \(h.count)\n"
        return out
    }

    static func format(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int64(v)) : String(v)
    }

    /// Label values escape backslash, double quote and newline (exposition format 0.0.4).
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
