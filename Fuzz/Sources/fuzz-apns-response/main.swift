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
    FuzzInput.checkDelay(retryAfter, "Retry-After")
    for activityToken in [false, true] {
        let verdict = APNsResponseClassifier.classify(
            status: input.status, body: input.body, retryAfter: retryAfter, activityToken: activityToken)
        if case .retry(_, let after, _) = verdict { FuzzInput.checkDelay(after, "APNs retry") }
    }
    return 0
}
