import ChannelAPI
import Router

extension ServerMetrics {
    /// The local-push families of `GET /metrics`: `herald_local_streams` (open streams),
    /// `herald_local_deliveries_total{outcome}` (pushes by outcome: `confirmed` stayed local) and
    /// `herald_local_confirm_seconds` (from a push's write to its confirmation).
    public static func renderLocal(_ stats: LocalStreamStats) -> String {
        var out = family("herald_local_streams", "Open local-push streams of apps.", "gauge")
        out += "herald_local_streams \(stats.streams)\n"
        out += family("herald_local_deliveries_total", "Local pushes by outcome.", "counter")
        for outcome in LocalPushOutcome.allCases {
            let label = outcome.rawValue.replacingOccurrences(of: " ", with: "_")
            out += "herald_local_deliveries_total{outcome=\"\(label)\"} \(stats.outcomes[outcome] ?? 0)\n"
        }
        out += family("herald_local_confirm_seconds", "Time from a local push to the app's confirmation.", "histogram")
        var cumulative = 0
        for (i, bound) in LocalStreamStats.buckets.enumerated() {
            cumulative += stats.confirmBuckets[i]
            out += "herald_local_confirm_seconds_bucket{le=\"\(format(bound))\"} \(cumulative)\n"
        }
        let count = stats.confirmBuckets.reduce(0, +)
        out += "herald_local_confirm_seconds_bucket{le=\"+Inf\"} \(count)\n"
        out += "herald_local_confirm_seconds_sum \(format(stats.confirmSum))\n"
        out += "herald_local_confirm_seconds_count \(count)\n"
        return out
    }
}
