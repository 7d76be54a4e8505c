import APNsChannel
import ChannelAPI
import FuzzInput

@testable import RelayChannel

/// libFuzzer entry: a notification's `liveActivity` through both field parsers (APNs and Pulse).
/// The input is the notification JSON; the parsers must accept it or refuse it with their error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLiveActivity(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    guard let notification = try? HeraldNotification(jsonText: input.text) else { return 0 }
    if let la = notification.liveActivity {
        _ = try? APNsLiveActivity(la, notification: notification, now: FuzzInput.now)
    }
    _ = try? PulseLiveActivity(notification, now: FuzzInput.now)
    return 0
}
