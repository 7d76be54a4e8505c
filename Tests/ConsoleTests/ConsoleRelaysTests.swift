import HeraldConsole
import Testing

/// The console's relay section (docs/console.md, "Relay traffic"): a tab and a section on the page,
/// its script served beside console.js, reading `GET /v1/relays`.
@Suite struct ConsoleRelaysTests {
    @Test func thePageHasTheRelaySection() throws {
        let page = try #require(ConsoleAssets.asset(named: "index.html")).body
        #expect(page.contains(#"<script src="/console/relays.js" defer></script>"#))
        #expect(page.contains(#"data-view="relays""#))
        #expect(page.contains(#"id="view-relays""#))
        let js = try #require(ConsoleAssets.response(forPath: "/console/relays.js"))
        #expect(js.status == 200)
        #expect(js.headers["Content-Type"] == "text/javascript; charset=utf-8")
        #expect(String(decoding: js.body, as: UTF8.self).contains(#"api("GET", "/v1/relays")"#))
        #expect(try #require(ConsoleAssets.asset(named: "console.js")).body.contains("loadRelays()"))
    }
}
