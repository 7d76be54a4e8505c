import Foundation
import HeraldConsole
import Testing

/// The console's files are built into the binary from `Sources/HeraldConsole/Console/`.
@Suite struct ConsoleAssetsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let sources = root.appendingPathComponent("Sources/HeraldConsole/Console")

    /// The embedded files are exactly the source files (SwiftPM's `.embedInCode` resources): a new
    /// file needs its line in Package.swift's HeraldConsole resources and in `ConsoleAssets.files`.
    @Test func embeddedFilesMatchTheSources() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).sorted()
        #expect(
            ConsoleAssets.files.map(\.path) == names,
            "list it in Package.swift (HeraldConsole resources) and ConsoleAssets.files")
        for name in names {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(name), encoding: .utf8)
            let asset = try #require(ConsoleAssets.asset(named: name))
            #expect(asset.body == text, "\(name) differs from its embedded copy")
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

    /// WCAG 2 contrast ratio of two `#rrggbb` colours.
    static func contrast(_ a: String, _ b: String) throws -> Double {
        func luminance(_ hex: String) throws -> Double {
            let v = try #require(Int(hex.dropFirst(), radix: 16))
            let channels = [(v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF].map { c -> Double in
                let s = Double(c) / 255
                return s <= 0.03928 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4)
            }
            return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
        }
        let (la, lb) = (try luminance(a), try luminance(b))
        return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
    }

    /// Text colours (and white text on the outcome pills and buttons) reach WCAG AA, 4.5:1.
    @Test func coloursHaveEnoughContrast() throws {
        let css = try #require(ConsoleAssets.asset(named: "console.css")).body
        var vars: [String: String] = [:]
        for m in css.matches(of: try Regex(#"--([a-z-]+):\s*(#[0-9a-fA-F]{6})"#)) {
            vars[String(try #require(m.output[1].substring))] = String(try #require(m.output[2].substring))
        }
        let text = ["fg", "muted", "accent", "delivered", "retry", "dead", "failed", "suppressed"]
        #expect(Set(text).isSubset(of: Set(vars.keys)), "\(vars)")
        for name in text {
            let colour = try #require(vars[name])
            for background in ["#ffffff", try #require(vars["panel"])] {
                let ratio = try Self.contrast(colour, background)
                #expect(ratio >= 4.5, "--\(name) \(colour) on \(background): \(ratio)")
            }
        }
        #expect(try Self.contrast("#a40e26", "#ffebe9") >= 4.5)  // the error box
        let js = try #require(ConsoleAssets.asset(named: "console.js")).body
        #expect(js.contains(#"delivered: "\#(try #require(vars["delivered"]))""#), "the chart uses the CSS colours")
    }
}
