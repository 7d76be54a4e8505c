import ChannelAPI
import FuzzInput
import HeraldChannels

private let registry = HeraldChannels.registry

/// libFuzzer entry: a device registration is parsed and validated (the generic rules, then its
/// platform's descriptor), or refused with a `ValidationError`; never a trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDevice(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    if let device = try? Device(jsonText: input.text) {
        _ = try? Device.validate(device)
        _ = try? registry.validate(device)
    }
    return 0
}
