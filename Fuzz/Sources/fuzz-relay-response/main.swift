import ChannelAPI
import ChannelSupport
import FuzzInput

@testable import RelayChannel

private let target = DeliveryTarget(
    device: Device(deviceId: "d1", platform: "ios", fields: ["token": "t1"]), deliveryId: "n1:d1")

/// libFuzzer entry: the relays' answer classifiers (hapi, Home Assistant, openchamber), fed a
/// status, a `Retry-After` and a body. Each must give exactly one result per target.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRelayResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let retryAfter = input.retryAfter.flatMap { RetryAfter.parse($0, now: FuzzInput.now) }
    let hapi = HapiRelay.classify(target, status: input.status, body: input.body, retryAfter: retryAfter)
    FuzzInput.checkDelay(hapi.retryAfter, "hapi retry")
    let ha = HomeAssistantRelay.classify(
        target, status: input.status, body: input.body, now: FuzzInput.now, retryAfter: retryAfter)
    FuzzInput.checkDelay(ha.retryAfter, "Home Assistant retry (resetsAt)")
    _ = OpenChamberSigning.parseResults(input.body)
    let results = OpenChamberSigning.classify(
        byToken: ["t1": [target]], status: input.status, body: input.body, retryAfter: retryAfter)
    precondition(results.count == 1, "openchamber classify: \(results.count) results for 1 target")
    for r in results { FuzzInput.checkDelay(r.retryAfter, "openchamber retry") }
    return 0
}
