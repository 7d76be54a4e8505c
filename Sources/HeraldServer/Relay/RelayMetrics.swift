import HeraldSync

/// The relay counters of `GET /metrics` (docs/relay-server.md): requests answered per protocol and code,
/// and pushes sent per protocol and outcome. Labels are bounded (configured protocols, status codes,
/// the five outcomes); no token or content.
public final class RelayMetrics: Sendable {
    struct Key: Hashable, Comparable {
        let relay: String
        let value: String

        static func < (a: Key, b: Key) -> Bool { (a.relay, a.value) < (b.relay, b.value) }
    }

    private let counts = Locked<(requests: [Key: Int], pushes: [Key: Int])>(([:], [:]))

    /// The relay history this process has not yet written to the store.
    public let history = RelayHistory()

    /// The bound on this process's relay pushes in flight, over every relay request.
    public let pushGate = RelayPushGate(capacity: RelayMetrics.pushesInFlight)

    /// Relay pushes in flight at most per process.
    public static let pushesInFlight = 300

    /// Creates empty counters.
    public init() {}

    /// A relay request of `relay` was answered with `code`.
    public func countRequest(relay: String, code: Int) {
        counts.withLock { $0.requests[Key(relay: relay, value: String(code)), default: 0] += 1 }
    }

    /// A push of `relay` reached `outcome` (`delivered`, `dead`, `retry`, `failed`).
    public func countPush(relay: String, outcome: String) {
        counts.withLock { $0.pushes[Key(relay: relay, value: outcome), default: 0] += 1 }
    }

    /// The exposition text (empty until a relay was called).
    public func render() -> String {
        let c = counts.withLock { $0 }
        return Self.family("herald_relay_requests_total", "Relay requests answered.", "code", c.requests)
            + Self.family("herald_relay_pushes_total", "Relay pushes that reached an outcome.", "outcome", c.pushes)
    }

    /// One counter family, `{protocol, <label>}` per key; empty without samples.
    static func family(_ name: String, _ help: String, _ label: String, _ samples: [Key: Int]) -> String {
        guard !samples.isEmpty else { return "" }
        var out = "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        for (k, v) in samples.sorted(by: { $0.key < $1.key }) {
            out +=
                "\(name){protocol=\"\(ServerMetrics.escape(k.relay))\",\(label)=\"\(ServerMetrics.escape(k.value))\"} \(v)\n"
        }
        return out
    }
}
