import ChannelAPI
import ChannelSupport
import Foundation

/// A token bucket kept as a small JSON value in the channel's state store, so that every `herald`
/// process sharing the database draws from the same bucket. Pure: the caller does the
/// read-modify-write inside ``ChannelStateStore/update(_:_:)``.
///
/// A bucket also carries a hard pause (`pausedUntil`), set from a 429 `retry_after`, that beats the
/// token count.
public struct TelegramTokenBucket: Sendable, Equatable {
    /// Tokens added per second.
    public var rate: Double
    /// Most tokens held (the burst).
    public var capacity: Double
    /// Tokens now held.
    public var tokens: Double
    /// When ``tokens`` was last brought up to date (milliseconds since 1970).
    public var updatedAt: Int64
    /// No token is handed out before this time (milliseconds since 1970), or 0.
    public var pausedUntil: Int64

    /// A full bucket.
    public init(rate: Double, capacity: Double, now: Date) {
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.updatedAt = now.millisecondsSince1970
        self.pausedUntil = 0
    }

    /// Restores a bucket from its stored JSON, or a full one when absent or unreadable. Rate and
    /// capacity always come from the caller (the configuration may have changed).
    public init(stored: [UInt8]?, rate: Double, capacity: Double, now: Date) {
        self.init(rate: rate, capacity: capacity, now: now)
        guard let bytes = stored, let o = (try? JSONValue.parse(bytes))?.objectValue,
            let tokens = o["tokens"]?.numberValue, let at = o["at"]?.numberValue
        else { return }
        self.tokens = min(capacity, max(0, tokens))
        // Stored numbers are clamped: a damaged document must not trap the conversion or the arithmetic.
        self.updatedAt = max(0, Int64(clamping: at))
        self.pausedUntil = max(0, Int64(clamping: o["pause"]?.numberValue ?? 0))
    }

    /// The stored form.
    public var stored: [UInt8] {
        JSONValue.object([
            "tokens": .number(tokens), "at": .number(Double(updatedAt)), "pause": .number(Double(pausedUntil)),
        ]).canonicalBytes
    }

    /// Takes one token when one is available now (returns nil) or tells how long to wait (takes
    /// nothing).
    public mutating func take(now: Date) -> Duration? {
        let ms = now.millisecondsSince1970
        if ms > updatedAt {
            tokens = min(capacity, tokens + (Double(ms) - Double(updatedAt)) / 1000 * rate)
            updatedAt = ms
        }
        if pausedUntil > ms {
            let (wait, overflow) = pausedUntil.subtractingReportingOverflow(ms)
            return .milliseconds(
                overflow ? RetryAfter.maximum.milliseconds : min(wait, RetryAfter.maximum.milliseconds))
        }
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        let waitMs = ((1 - tokens) / rate * 1000).rounded(.up)
        return .milliseconds(max(1, min(Int64(clamping: waitMs), RetryAfter.maximum.milliseconds)))
    }

    /// Pauses the bucket until `now + duration` (a later existing pause is kept).
    public mutating func pause(for duration: Duration, now: Date) {
        let (until, overflow) = now.millisecondsSince1970.addingReportingOverflow(
            RetryAfter.clamp(duration).milliseconds)
        pausedUntil = max(pausedUntil, overflow ? .max : until)
    }
}

/// The channel's flood limits: one bucket per chat (1 message per second, no burst) and one for the
/// bot (30 per second). State keys: `rate:chat:<chat id>` and `rate:global`.
struct TelegramFloodLimits: Sendable {
    var perChatRate: Double = 1
    var globalRate: Double = 30
    /// Longest wait taken in-process before a delivery is handed back as `retry`.
    var maxWait: Duration = .seconds(2)

    static func chatKey(_ chat: TelegramChatID) -> String { "rate:chat:\(chat.text)" }
    static let globalKey = "rate:global"

    /// Takes a token from `key`'s bucket, or returns the wait.
    func take(_ key: String, rate: Double, capacity: Double, state: any ChannelStateStore, now: Date) throws
        -> Duration?
    {
        try state.update(key) { old in
            var bucket = TelegramTokenBucket(stored: old, rate: rate, capacity: capacity, now: now)
            let wait = bucket.take(now: now)
            return (bucket.stored, wait)
        }
    }

    /// Pauses `key`'s bucket.
    func pause(
        _ key: String, rate: Double, capacity: Double, for duration: Duration, state: any ChannelStateStore, now: Date
    )
        throws
    {
        try state.update(key) { old in
            var bucket = TelegramTokenBucket(stored: old, rate: rate, capacity: capacity, now: now)
            bucket.pause(for: duration, now: now)
            return (bucket.stored, ())
        }
    }

    /// Waits (through `clock`) until both the chat's and the global bucket give a token. Returns nil
    /// when the send may go ahead, or the remaining wait when it would exceed ``maxWait``: the delivery
    /// is then deferred as `retry`.
    func acquire(chat: TelegramChatID, state: any ChannelStateStore, clock: any HeraldClock) async throws -> Duration? {
        var waited: Duration = .zero
        var haveChatToken = false
        while true {
            if !haveChatToken {
                if let wait = try take(
                    Self.chatKey(chat), rate: perChatRate, capacity: 1, state: state, now: clock.now())
                {
                    if waited + wait > maxWait { return wait }
                    try await clock.sleep(for: wait)
                    waited += wait
                    continue
                }
                haveChatToken = true
            }
            if let wait = try take(
                Self.globalKey, rate: globalRate, capacity: globalRate, state: state, now: clock.now())
            {
                if waited + wait > maxWait { return wait }
                try await clock.sleep(for: wait)
                waited += wait
                continue
            }
            return nil
        }
    }
}
