import FCMChannel
import FuzzInput

/// libFuzzer entry: FCM's send-answer and OAuth-token-answer classifiers.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFCMResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = FCMErrorBody(body: input.body)
    _ = FCMSendVerdict.classify(
        status: input.status, body: input.body, retryAfter: input.retryAfter, now: FuzzInput.now)
    _ = FCMTokenResponse.classify(
        status: input.status, body: input.body, retryAfter: input.retryAfter, now: FuzzInput.now)
    return 0
}
