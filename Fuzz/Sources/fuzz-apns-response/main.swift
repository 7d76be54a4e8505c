import APNsChannel
import ChannelAPI
import ChannelSupport
import FuzzInput

/// libFuzzer entry: APNs's answer classifier, fed a status, a `Retry-After` and a body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPNsResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let retryAfter = input.retryAfter.flatMap { RetryAfter.parse($0, now: FuzzInput.now) }
    _ = APNsResponseClassifier.parseBody(input.body)
    _ = APNsResponseClassifier.classify(status: input.status, body: input.body, retryAfter: retryAfter)
    _ = APNsResponseClassifier.classify(
        status: input.status, body: input.body, retryAfter: retryAfter, activityToken: true)
    return 0
}
