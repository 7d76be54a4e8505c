import ChannelAPI
import ChannelSupport
import Foundation
import FuzzInput
import Router

/// libFuzzer entry: any `Retry-After` text gives a duration in `0...RetryAfter.maximum` or nil, and
/// what the outbox does with it never traps: the retry policy's next attempt, stored in milliseconds.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRetryAfter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    guard let d = RetryAfter.parse(input.text, now: FuzzInput.now) else { return 0 }
    precondition(d >= .zero, "negative Retry-After")
    precondition(d <= RetryAfter.maximum, "Retry-After \(d) above RetryAfter.maximum")
    _ = d.milliseconds
    let decision = RetryPolicy.default.decide(
        attempt: 1, now: FuzzInput.now, retryAfter: d, expiresAt: nil, jitter: 0.5)
    if case .retry(let at) = decision {
        // The store keeps the next attempt as milliseconds since 1970 (SQLiteStore.ms).
        _ = at.millisecondsSince1970
    }
    return 0
}
