import FuzzInput
import TelegramChannel

/// libFuzzer entry: the Bot API answer parser and classifier.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTelegramResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let response = TelegramResponse(status: input.status, body: input.body)
    if case .retry(_, let after) = TelegramOutcome.classify(response) {
        FuzzInput.checkDelay(after, "Telegram retry_after")
    }
    return 0
}
