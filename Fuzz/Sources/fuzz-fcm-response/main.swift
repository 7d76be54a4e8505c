import FCMChannel
import FuzzInput

/// libFuzzer entry: FCM's send-answer and OAuth-token-answer classifiers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFCMResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = FCMErrorBody(body: input.body)
    let send = FCMSendVerdict.classify(
        status: input.status, body: input.body, retryAfter: input.retryAfter, now: FuzzInput.now)
    if case .retry(_, let after) = send { FuzzInput.checkDelay(after, "FCM send retry") }
    let token = FCMTokenResponse.classify(
        status: input.status, body: input.body, retryAfter: input.retryAfter, now: FuzzInput.now)
    if case .unavailable(_, _, let after) = token { FuzzInput.checkDelay(after, "FCM token retry") }
    return 0
}
