import ChannelAPI
import Foundation
import HeraldCrypto

/// The forwarder's per-token daily counters, in the store's `relay.home-assistant` area so every
/// `herald serve` on one store enforces one limit: `day:<hex SHA-256 of the token>` →
/// `{"day", "attempts", "successful", "errors"}`. A new UTC day (from the injected clock) starts
/// from zero. The token itself is never stored.
struct HomeAssistantRateLimit {
    let store: any ChannelStateStore
    let maximum: Int

    /// One token's counters for one UTC day.
    struct Counters: Equatable {
        /// Days since 1970 (UTC).
        var day: Int64
        /// Pushes let through today (sent or not).
        var attempts = 0
        /// Pushes the provider accepted.
        var successful = 0
        /// Pushes the provider refused or could not take.
        var errors = 0

        init(day: Int64) { self.day = day }

        init?(_ bytes: [UInt8]?) {
            guard let bytes, let o = (try? JSONValue.parse(bytes))?.objectValue, let d = o["day"]?.intValue else {
                return nil
            }
            day = Int64(d)
            attempts = o["attempts"]?.intValue ?? 0
            successful = o["successful"]?.intValue ?? 0
            errors = o["errors"]?.intValue ?? 0
        }

        var bytes: [UInt8] {
            JSONValue.object([
                "day": .number(Double(day)), "attempts": .number(Double(attempts)),
                "successful": .number(Double(successful)), "errors": .number(Double(errors)),
            ]).canonicalBytes
        }
    }

    /// The store failed.
    struct Unavailable: Error {}

    static func key(_ token: String) -> String {
        "day:" + Hex.encode(SHA256.hash(Array(token.utf8)))
    }

    static func day(_ now: Date) -> Int64 {
        let s = now.secondsSince1970
        return s >= 0 ? s / 86_400 : (s - 86_399) / 86_400
    }

    /// Counts one attempt unless the token is at its limit today; returns whether it may be sent and
    /// the counters after.
    func reserve(_ token: String, now: Date) throws(Unavailable) -> (allowed: Bool, counters: Counters) {
        let today = Self.day(now)
        do {
            return try store.update(Self.key(token)) { old -> (newValue: [UInt8]?, result: (Bool, Counters)) in
                var c = Counters(old).flatMap { $0.day == today ? $0 : nil } ?? Counters(day: today)
                guard c.attempts < maximum else { return (old, (false, c)) }
                c.attempts += 1
                return (c.bytes, (true, c))
            }
        } catch { throw Unavailable() }
    }

    /// Records the outcome of a reserved attempt; returns the counters after (`fallback` when the
    /// store fails: the push was sent already, so the answer still goes out).
    func record(_ token: String, success: Bool, now: Date, fallback: Counters) -> Counters {
        let today = Self.day(now)
        let updated = try? store.update(Self.key(token)) { old -> (newValue: [UInt8]?, result: Counters) in
            var c = Counters(old).flatMap { $0.day == today ? $0 : nil } ?? Counters(day: today)
            if success { c.successful += 1 } else { c.errors += 1 }
            return (c.bytes, c)
        }
        guard let updated else {
            var c = fallback
            if success { c.successful += 1 } else { c.errors += 1 }
            return c
        }
        return updated
    }

    /// `rateLimits` as Home Assistant logs it: `successful`, `errors`, `total`, `maximum`,
    /// `remaining`, `resetsAt` (the next UTC midnight, ISO 8601).
    func json(_ c: Counters) -> JSONValue {
        let resets = Date(timeIntervalSince1970: TimeInterval((c.day + 1) * 86_400))
        return [
            "successful": .number(Double(c.successful)), "errors": .number(Double(c.errors)),
            "total": .number(Double(c.attempts)), "maximum": .number(Double(maximum)),
            "remaining": .number(Double(max(0, maximum - c.attempts))), "resetsAt": .string(ISO8601Time.string(resets)),
        ]
    }
}
