import ChannelAPI
import Testing

/// Device-supplied URLs: which requests are restricted at connect time, and what registration refuses.
@Suite struct URLPolicyTests {
    @Test func requestsAreRestrictedUnlessAllowHostsNamesTheHost() {
        #expect(URLPolicy.addressPolicy(for: "https://push.example.net/x", allowHosts: []) == .publicOnly)
        #expect(URLPolicy.addressPolicy(for: "https://127.1:8443/x", allowHosts: ["127.0.0.1"]) == .publicOnly)
        #expect(URLPolicy.addressPolicy(for: "https://127.0.0.1:8443/x", allowHosts: ["127.0.0.1"]) == .any)
        #expect(URLPolicy.addressPolicy(for: "https://127.0.0.1:8443/x", allowHosts: ["127.0.0.1:8443"]) == .any)
        #expect(URLPolicy.addressPolicy(for: "https://127.0.0.1:8443/x", allowHosts: ["127.0.0.1:9"]) == .publicOnly)
        #expect(URLPolicy.addressPolicy(for: "https://HA.Local/x", allowHosts: ["ha.local"]) == .any)
        #expect(URLPolicy.addressPolicy(for: "not a url", allowHosts: ["x"]) == .publicOnly)
    }

    @Test(arguments: [
        "https://127.1/p", "https://2130706433/p", "https://0x7f000001/p", "https://0177.0.0.1/p",
        "https://0x7f.0.0.1/p", "https://[0::1]/p", "https://[0:0:0:0:0:0:0:1]/p", "https://[::ffff:7f00:1]/p",
        "https://2852039166/p", "https://0xa9fea9fe/p", "https://167772161/p", "https://012.0.0.1/p",
        "https://localhost/p",
    ])
    func registrationRefusesPrivateLiteralsInEveryForm(_ url: String) {
        #expect(throws: ValidationError.self) { try URLPolicy.check(url, field: "pushUrl", allowHosts: []) }
    }

    @Test func registrationAcceptsPublicAndAllowListed() throws {
        try URLPolicy.check("https://fcm.googleapis.com/fcm/send/abc", field: "e", allowHosts: [])
        try URLPolicy.check("https://127.1/p", field: "e", allowHosts: ["127.1"])
    }
}
