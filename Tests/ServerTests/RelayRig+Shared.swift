import ChannelAPI
import Testing

/// What every scale-out test of the relays checks, whether its two relays run in the test process
/// (``RelayRig/pair(relays:store:_:)``) or as `herald serve` processes
/// (``RelayRig/processes(relays:url:_:)``): the relays at `first` and `second` share one store.
extension RelayRig {
    /// openchamber (seed 002), through `openchamber_relay_client.py`'s `two-relays` scenario: a
    /// token bound through the first relay is bound for another server on the second, and a signed
    /// send used on the first is a replay on the second. Two pushes reach APNs.
    static func expectSharedBindingsAndReplays(_ first: String, _ second: String) throws {
        let lines = try script("openchamber_relay_client.py", [first, "two-relays", token, second])
        var byStep: [String: Int] = [:]
        for l in lines { if let s = l["step"]?.stringValue { byStep[s] = l["status"]?.intValue } }
        #expect(byStep["register-a-on-1"] == 200)
        #expect(byStep["register-b-on-2"] == 409, "the binding made through one relay holds on the other")
        #expect(byStep["send-on-1"] == 200)
        #expect(byStep["replayed-on-2"] == 409, "the replay window is shared")
        #expect(byStep["fresh-on-2"] == 200, "the binding is visible to the other relay")
    }

    /// Home Assistant (seed 003), through `ha_push_client.py`: with `daily-limit: 3`, two pushes
    /// through each relay for one push token are 201, 201, 201 and 429, and the refusal's
    /// `rateLimits` counts the three. Three pushes reach APNs.
    static func expectSharedDailyLimit(_ first: String, _ second: String) throws {
        func post(_ base: String) throws -> [JSONValue] {
            try script(
                "ha_push_client.py",
                [base + "/api/sendPush/iOS/v1", token, "io.robbie.HomeAssistant", "plain", "2"])
        }
        let one = try post(first)
        let two = try post(second)
        #expect(one.map { $0["status"] } == [201, 201])
        #expect(two.map { $0["status"] } == [201, 429], "the limit is shared")
        #expect(two[1]["body"]?["rateLimits"]?["successful"] == 3)
    }
}
