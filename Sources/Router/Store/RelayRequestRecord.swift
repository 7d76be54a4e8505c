import Foundation

/// One request a relay of `herald serve` answered (docs/relay-server.md, "History and metrics"):
/// when, which protocol and route, the status, what became of its pushes, and who called. Never any
/// content: no body, no device token, no bearer token, no address in clear.
public struct RelayRequestRecord: Sendable, Equatable {
    /// When it was answered.
    public var at: Date
    /// The protocol (`hapi`, `openchamber`, `home-assistant`).
    public var relay: String
    /// The route's template (`/v1/push`, `/v1/devices/{deviceId}/push`), never the path as requested.
    public var route: String
    /// The HTTP status of the answer.
    public var status: Int
    /// Pushes sent for it, counted by outcome (`delivered`, `dead`, `retry`, `failed`); empty when
    /// none was sent.
    public var pushes: [String: Int]
    /// Who called: `token:NAME` (the bearer token's name) or `address:` and the first 16 hex digits of
    /// the SHA-256 of the client address.
    public var caller: String

    /// Creates a record.
    public init(at: Date, relay: String, route: String, status: Int, pushes: [String: Int] = [:], caller: String) {
        self.at = at
        self.relay = relay
        self.route = route
        self.status = status
        self.pushes = pushes
        self.caller = caller
    }

    /// `pushes` as stored: canonical JSON (`{"dead":1,"delivered":99}`).
    public var pushesText: String {
        let parts = pushes.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// `pushes` from its stored text (empty when unreadable).
    public static func pushes(fromText text: String) -> [String: Int] {
        guard let o = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else { return [:] }
        return o.compactMapValues { ($0 as? NSNumber)?.intValue }
    }
}

/// Relay requests counted by protocol, status and push outcome, over the history a store keeps.
public struct RelayRequestTally: Sendable, Equatable {
    /// The protocol.
    public var relay: String
    /// The HTTP status.
    public var status: Int
    /// The requests with that status.
    public var requests: Int
    /// Their pushes by outcome.
    public var pushes: [String: Int]

    /// Creates a tally.
    public init(relay: String, status: Int, requests: Int, pushes: [String: Int]) {
        self.relay = relay
        self.status = status
        self.requests = requests
        self.pushes = pushes
    }

    /// Sums rows of `(relay, status, pushes text, count)` into one tally per (relay, status), ordered
    /// by relay then status.
    static func summing(_ rows: [(relay: String, status: Int, pushes: String, count: Int)]) -> [RelayRequestTally] {
        var out: [String: [Int: RelayRequestTally]] = [:]
        for r in rows {
            var t =
                out[r.relay]?[r.status] ?? RelayRequestTally(relay: r.relay, status: r.status, requests: 0, pushes: [:])
            t.requests += r.count
            for (k, v) in RelayRequestRecord.pushes(fromText: r.pushes) { t.pushes[k, default: 0] += v * r.count }
            out[r.relay, default: [:]][r.status] = t
        }
        return out.keys.sorted().flatMap { relay in out[relay]!.keys.sorted().map { out[relay]![$0]! } }
    }
}
