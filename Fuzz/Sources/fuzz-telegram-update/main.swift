import TelegramChannel

/// libFuzzer entry: the Bot API `Update` parser (webhook bodies and `getUpdates` results).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTelegramUpdate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    if case .success(let update) = TelegramUpdate.parse(body) {
        _ = update.callbackQuery?.person
    }
    return 0
}
