import ChannelAPI
import Foundation
import HeraldHTTPTesting
import Testing

@testable import HeraldHTTP

/// Host keys are RFC 3986 authorities reduced to what a connection is made to: scheme, host, port
/// (RFC 9110 §4.2: 80 for http, 443 for https when absent); user info names no other host.
@Suite struct HostKeyTests {
    @Test(arguments: [
        ("https://example.com/", "https://example.com:443"),
        ("http://example.com/", "http://example.com:80"),
        ("https://example.com", "https://example.com:443"),
        ("https://example.com:8443/a/b?c=d#e", "https://example.com:8443"),
        ("https://example.com?q=1", "https://example.com:443"),
        ("https://example.com#top", "https://example.com:443"),
        ("HTTPS://Push.Example.COM/Path", "https://push.example.com:443"),
        ("http://127.0.0.1:8080/send", "http://127.0.0.1:8080"),
    ])
    func schemeHostAndPort(_ url: String, _ key: String) {
        #expect(HostKey.of(url) == key)
    }

    @Test func defaultPortsAreOneHostWithTheExplicitOnes() {
        #expect(HostKey.of("https://example.com/a") == HostKey.of("https://example.com:443/b"))
        #expect(HostKey.of("http://example.com/a") == HostKey.of("http://example.com:80/b"))
        #expect(HostKey.of("https://example.com/") != HostKey.of("https://example.com:80/"))
        #expect(HostKey.of("https://example.com/") != HostKey.of("http://example.com/"))
    }

    @Test(arguments: [
        "https://user@example.com/x",
        "https://user:secret@example.com/x",
        "https://us%40er:p%3Ass@example.com:443/x",
    ])
    func userInfoIsNotPartOfTheHost(_ url: String) {
        let key = HostKey.of(url)
        #expect(key == "https://example.com:443")
        #expect(!key.contains("secret"))
    }

    @Test(arguments: [
        ("https://[::1]:8443/x", "https://[::1]:8443"),
        ("https://[2001:DB8::1]/", "https://[2001:db8::1]:443"),
        // Written as given (libcurl compares host names as text, so another spelling is another host).
        ("http://[::ffff:127.0.0.1]/", "http://[::ffff:127.0.0.1]:80"),
        ("https://[fe80::1%25eth0]:9000/", "https://[fe80::1%25eth0]:9000"),
    ])
    func ipv6LiteralsKeepTheirBrackets(_ url: String, _ key: String) {
        #expect(HostKey.of(url) == key)
    }

    @Test func aURLLibcurlCannotParseIsItsOwnKey() {
        #expect(HostKey.of("https://exa mple.com/") == "https://exa mple.com/")
        #expect(HostKey.of("https://example.com:99999/") == "https://example.com:99999/")
        // Not remembered by its origin: the next URL of that origin is its own key too.
        #expect(HostKey.of("https://example.com:99999/b") == "https://example.com:99999/b")
    }

    /// What the remembered keys are filed under: the text before the path, query or fragment.
    @Test(arguments: [
        ("https://api.push.apple.com/3/device/abc", "https://api.push.apple.com"),
        ("https://example.com", "https://example.com"),
        ("https://example.com?q=/x", "https://example.com"),
        ("https://example.com#/top", "https://example.com"),
        ("https://user:pa%2Fss@example.com:8443/a", "https://user:pa%2Fss@example.com:8443"),
        ("https://[fe80::1%25eth0]:9000/x", "https://[fe80::1%25eth0]:9000"),
    ])
    func originIsTheTextBeforeThePath(_ url: String, _ origin: String) {
        #expect(HostKey.origin(of: url) == Substring(origin))
    }

    @Test func noOriginWithoutSchemeSeparator() {
        #expect(HostKey.origin(of: "example.com/a") == nil)
        #expect(HostKey.origin(of: "https:example.com/a") == nil)
    }

    /// Keys from memory are the keys libcurl gives: many paths of one origin, and more origins than
    /// the memory holds (it starts over), each asked twice.
    @Test func rememberedKeysAreLibcurlsKeys() {
        for i in 0..<(HostKey.cacheLimit + 40) {
            let host = "h\(i).example.com"
            for path in ["/3/device/\(i)", "/x?y=\(i)", ""] {
                #expect(HostKey.of("https://\(host):8443\(path)") == "https://\(host):8443")
                #expect(HostKey.of("http://\(host)\(path)") == "http://\(host):80")
            }
        }
        #expect(HostKey.of("HTTPS://Push.Example.COM/Path") == "https://push.example.com:443")
        #expect(HostKey.of("https://push.example.com/other") == "https://push.example.com:443")
    }
}

/// Over a real loop: a URL with user info is the same host as the plain one, so it waits in the same
/// per-host queue (before `curl_url`, it was a host of its own and went straight to libcurl).
@Suite(.stopsFakeHTTPServers) struct HostKeyQueueTests {
    @Test func userInfoDoesNotOpenASecondQueueForTheSameHost() async throws {
        let server = try await FakeHTTPServer.start()
        let client = try HTTPClient(
            configuration: .init(caFile: server.caFile, maxConnectionsPerHost: 1, maxConcurrentStreams: 1))
        try await server.route("/slow", [FakeHTTPResponse(status: 200, delay: .seconds(30))])
        let first = Task { try? await client.send(HTTPRequest(url: server.baseURL + "/slow/0")) }
        #expect(try await waitUntil { try await server.requests().count == 1 })
        let withUser = server.baseURL.replacingOccurrences(of: "https://", with: "https://user@")
        #expect(withUser != server.baseURL)
        let second = Task { try? await client.send(HTTPRequest(url: withUser + "/slow/1")) }
        // The host's one slot is busy: the second request waits in the loop, not in libcurl.
        #expect(try await waitUntil { client.waitingRequests == 1 })
        first.cancel()
        second.cancel()
        _ = await first.value
        _ = await second.value
        await client.shutdown()
        await server.stop()
    }

    /// Polls `condition` until it holds or 20 seconds pass.
    private func waitUntil(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
