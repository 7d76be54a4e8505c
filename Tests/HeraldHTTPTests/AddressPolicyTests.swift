import ChannelAPI
import Foundation
import HeraldHTTP
import HeraldHTTPTesting
import Testing

/// Device-supplied URLs are checked on the address the connection is made to, not on their text
/// (issue 15 item 9).
@Suite(.stopsFakeHTTPServers) struct AddressPolicyTests {
    /// Hosts that all mean loopback, link-local metadata or private space, in the forms that got
    /// through a text check.
    static let blockedHosts = [
        "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "127.0.0.1",
        "[0::1]", "[0:0:0:0:0:0:0:1]", "[::1]", "[::ffff:127.0.0.1]", "[0:0:0:0:0:ffff:7f00:1]",
        "[0000:0000:0000:0000:0000:ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
        "169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "[::ffff:169.254.169.254]",
        "10.0.0.1", "167772161", "0xa000001", "012.0.0.1", "[::ffff:a00:1]",
        "localhost",
    ]

    @Test(arguments: blockedHosts) func deviceURLNeverReachesLoopbackOrPrivate(_ host: String) async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/", [FakeHTTPResponse(status: 200)])
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        defer { Task { await client.shutdown() } }
        let request = HTTPRequest(
            url: "https://\(host):\(server.port)/push/abc", body: Array("x".utf8), timeout: .seconds(5),
            addressPolicy: .publicOnly)
        do {
            let response = try await client.send(request)
            Issue.record("\(host): expected blocked-address, got status \(response.status)")
        } catch {
            #expect(error.code == .blockedAddress, "\(host): \(error)")
            #expect(error.description.hasPrefix("blocked-address: refused to connect to "), "\(error)")
            #expect(!error.isTransient)
        }
        #expect(try await server.requests().isEmpty, "\(host) reached the server")
    }

    /// The same forms do reach the server when the request is not restricted (the operator's own
    /// endpoints, or a host named in allow-hosts): the test above is not passing by accident.
    @Test(arguments: ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "localhost"])
    func unrestrictedRequestReachesTheSameServer(_ host: String) async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/", [FakeHTTPResponse(status: 201)])
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        defer { Task { await client.shutdown() } }
        let response = try await client.send(
            HTTPRequest(url: "https://\(host):\(server.port)/push/abc", body: Array("x".utf8), timeout: .seconds(10)))
        #expect(response.status == 201)
        #expect(try await server.requests().count == 1)
    }

    /// A connection opened for an operator-configured request is not reused by a restricted one.
    @Test func restrictedRequestDoesNotReuseAnOpenLoopbackConnection() async throws {
        let server = try await FakeHTTPServer.start()
        try await server.route("/", [FakeHTTPResponse(status: 200)])
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        defer { Task { await client.shutdown() } }
        let open = try await client.send(HTTPRequest(url: server.baseURL + "/operator", body: Array("x".utf8)))
        #expect(open.status == 200)
        do {
            _ = try await client.send(
                HTTPRequest(url: server.baseURL + "/device", body: Array("x".utf8), addressPolicy: .publicOnly))
            Issue.record("expected blocked-address")
        } catch {
            #expect(error.code == .blockedAddress, "\(error)")
        }
        let paths = try await server.requests().map(\.path)
        #expect(paths == ["/operator"])
    }

    /// Redirects are answers, not new destinations: a 302 to loopback is not followed.
    @Test func redirectToLoopbackIsNotFollowed() async throws {
        let server = try await FakeHTTPServer.start()
        let target = try await FakeHTTPServer.start()
        try await server.route("/", [FakeHTTPResponse(status: 302, headers: ["location": target.baseURL + "/admin"])])
        try await target.route("/", [FakeHTTPResponse(status: 200)])
        let client = try HTTPClient(configuration: .init(caFile: server.caFile))
        defer { Task { await client.shutdown() } }
        let response = try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/push"))
        #expect(response.status == 302)
        #expect(try await server.requests().count == 1)
        #expect(try await target.requests().isEmpty)
    }

    @Test func classifiesAddresses() {
        let refused = [
            "127.0.0.1", "127.255.255.254", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
            "100.64.0.1", "169.254.169.254", "224.0.0.1", "255.255.255.255", "240.0.0.1", "::", "::1",
            "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::127.0.0.1", "fe80::1", "febf::1", "fc00::1", "fd12:3456::1",
            "ff02::1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "2001:db8::1", "fec0::1",
        ]
        for ip in refused { #expect(AddressPolicy.refusal(forIP: ip) != nil, "\(ip)") }
        let allowed = [
            "1.1.1.1", "8.8.8.8", "172.15.255.255", "172.32.0.1", "100.63.255.255", "100.128.0.1", "192.169.0.1",
            "2606:4700:4700::1111", "2a00:1450:4001:80b::200a", "::ffff:8.8.8.8", "64:ff9b::808:808",
            "2002:808:808::1",
        ]
        for ip in allowed { #expect(AddressPolicy.refusal(forIP: ip) == nil, "\(ip)") }
        #expect(AddressPolicy.refusal(for: [127, 0, 0, 1]) == "loopback")
        #expect(AddressPolicy.refusal(for: [1, 2, 3]) != nil)
        #expect(AddressPolicy.refusal(forIP: "127.1") != nil)  // not an address inet_pton reads: refused
    }
}

/// The registration-time check reads IP literals the way resolvers do.
@Suite struct LiteralRefusalTests {
    @Test(arguments: [
        "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "[0::1]", "[0:0:0:0:0:0:0:1]",
        "[::ffff:7f00:1]", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "167772161", "0xa000001", "012.0.0.1",
        "127.0.0.1.",
    ])
    func numericFormsOfPrivateAddressesAreRefused(_ host: String) {
        #expect(AddressPolicy.literalRefusal(host: host) != nil, "\(host)")
    }

    @Test(arguments: [
        "8.8.8.8", "134744072", "[2606:4700:4700::1111]", "push.example.net", "fcm.googleapis.com", "1e100.net",
    ])
    func publicAddressesAndNamesAreNotRefusedByText(_ host: String) {
        #expect(AddressPolicy.literalRefusal(host: host) == nil, "\(host)")
    }
}
