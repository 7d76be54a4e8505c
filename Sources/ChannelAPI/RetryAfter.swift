/// A provider's "try again later" signal, as the contract bounds it.
///
/// Every delay read from the network (a `Retry-After` header, Telegram's `retry_after`, a relay's
/// `resetsAt`) is clamped to `0...`\(``maximum``), so that an answer such as
/// `Retry-After: 99999999999999999` becomes a one-day wait instead of a trap in a conversion. The
/// router clamps a channel's ``DeliveryResult/retryAfter`` with ``clamp(_:)`` too. ChannelSupport adds the
/// parsers (`RetryAfter.parse`, `seconds`, `until`).
public enum RetryAfter {
    /// The longest delay Herald honours from a provider: one day. Longer requests are cut to it.
    public static let maximum: Duration = .seconds(86_400)

    /// `duration` clamped to `0...`\(``maximum``).
    public static func clamp(_ duration: Duration) -> Duration {
        min(max(.zero, duration), maximum)
    }
}
