import ChannelSupport
import FuzzInput

/// libFuzzer entry: any `Retry-After` text gives a duration or nil; never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRetryAfter(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    if let d = RetryAfter.parse(input.text, now: FuzzInput.now) {
        precondition(d >= .zero, "negative Retry-After")
    }
    return 0
}
