import FuzzInput
import WebPushChannel

/// libFuzzer entry: the push service's answer classifier, and the aes128gcm header parser.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebPushResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let verdict = WebPushResponse.classify(
        status: input.status, body: input.body, retryAfter: input.retryAfter, now: FuzzInput.now)
    if case .retry(_, let after) = verdict { FuzzInput.checkDelay(after, "Web Push retry") }
    _ = WebPushResponse.describe(status: input.status, body: input.body)
    _ = try? ECEDecryptor.parseHeader(input.body)
    return 0
}
