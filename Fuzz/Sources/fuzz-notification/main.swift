import ChannelAPI
import FuzzInput

/// libFuzzer entry: a notification is parsed, or refused with a `ValidationError`; never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNotification(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    _ = try? HeraldNotification(jsonText: input.text)
    return 0
}
