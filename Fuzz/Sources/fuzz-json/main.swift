import ChannelAPI
import FuzzInput

/// libFuzzer entry: the JSON parser must return a value or a `JSONError`, and a parsed value must
/// serialise and parse back to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONValue.parse(bytes) else { return 0 }
    let again = try? JSONValue.parse(value.canonicalBytes)
    precondition(again == value, "canonical JSON did not parse back to the same value")
    return 0
}
