import Foundation
import HeraldConsole
import Testing

/// The console's files are built into the binary from `Sources/HeraldConsole/Console/`.
@Suite struct ConsoleAssetsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let sources = root.appendingPathComponent("Sources/HeraldConsole/Console")

    /// The embedded copy is exactly the source files: edit them, then run scripts/console-assets.py.
    @Test func embeddedFilesMatchTheSources() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).sorted()
        #expect(ConsoleAssets.files.map(\.path) == names, "run: python3 scripts/console-assets.py")
        for name in names {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(name), encoding: .utf8)
            let asset = try #require(ConsoleAssets.asset(named: name))
            #expect(asset.body == text, "\(name) differs from its embedded copy: run python3 scripts/console-assets.py")
        }
    }

    @Test func servesThePageAndItsFilesWithALockedDownPolicy() throws {
        for path in ["/console", "/console/"] {
            let page = try #require(ConsoleAssets.response(forPath: path))
            #expect(page.status == 200)
            #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(String(decoding: page.body, as: UTF8.self).contains("<script src=\"/console/console.js\""))
        }
        let js = try #require(ConsoleAssets.response(forPath: "/console/console.js"))
        #expect(js.status == 200)
        #expect(js.headers["Content-Type"] == "text/javascript; charset=utf-8")
        let css = try #require(ConsoleAssets.response(forPath: "/console/console.css"))
        #expect(css.headers["Content-Type"] == "text/css; charset=utf-8")
        for r in [js, css] {
            let csp = try #require(r.headers["Content-Security-Policy"])
            #expect(csp.contains("default-src 'none'"))
            #expect(csp.contains("connect-src 'self'"))
            #expect(csp.contains("script-src 'self'"))
            #expect(!csp.contains("unsafe-inline"))
            #expect(r.headers["X-Content-Type-Options"] == "nosniff")
            #expect(r.headers["Referrer-Policy"] == "no-referrer")
        }
        #expect(ConsoleAssets.response(forPath: "/console/missing.js")?.status == 404)
        #expect(ConsoleAssets.response(forPath: "/console/../Package.swift")?.status == 404)
        #expect(ConsoleAssets.response(forPath: "/consoles") == nil)
        #expect(ConsoleAssets.response(forPath: "/v1/summary") == nil)
    }

    /// No outside asset: no URL to another host anywhere in the files (the SVG namespace name is
    /// an identifier, never fetched), no web font, no inline script or style the policy would block.
    @Test func filesReferenceNothingOutside() throws {
        for asset in ConsoleAssets.files {
            let text = asset.body.replacingOccurrences(of: "\"http://www.w3.org/2000/svg\"", with: "\"\"")
            for needle in ["http://", "https://", "//cdn", "@import", "@font-face", "url("] {
                #expect(!text.contains(needle), "\(asset.path) contains \(needle)")
            }
        }
        let html = try #require(ConsoleAssets.asset(named: "index.html")).body
        #expect(!html.contains("<script>"), "inline scripts are refused by the page's own policy")
        #expect(!html.contains("style="), "inline styles are refused by the page's own policy")
        #expect(!html.contains("onclick="), "inline handlers are refused by the page's own policy")
    }

    /// Every input, select and textarea has a label.
    @Test func everyInputIsLabelled() throws {
        let html = try #require(ConsoleAssets.asset(named: "index.html")).body
        let ids = try Regex(#"<(?:input|select|textarea)[^>]*\sid="([^"]+)""#)
        var found = 0
        for m in html.matches(of: ids) {
            let id = String(try #require(m.output[1].substring))
            #expect(html.contains("<label for=\"\(id)\""), "no label for #\(id)")
            found += 1
        }
        #expect(found == 3)  // the token, the namespace selector, the explain box
    }
}
