import Foundation

/// One file of the operator console, built into the binary.
public struct ConsoleAsset: Sendable, Equatable {
    /// The file name under `/console/` (`index.html` is also served at `/console`).
    public var path: String
    /// The `Content-Type` it is served with.
    public var contentType: String
    /// The file's text.
    public var body: String
}

extension ConsoleAsset {
    /// An asset from its embedded bytes (UTF-8 text).
    init(path: String, contentType: String, bytes: [UInt8]) {
        self.init(path: path, contentType: contentType, body: String(decoding: bytes, as: UTF8.self))
    }
}

/// An answer to a `GET` under `/console`: pure data, which the server turns into its response.
public struct ConsoleResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// Response headers.
    public var headers: [String: String]
    /// The body.
    public var body: [UInt8]
}

/// The operator console's files (`Sources/HeraldConsole/Console/`, embedded by SwiftPM's
/// `.embedInCode` resources as `PackageResources` byte arrays) and how `GET /console…` is answered.
public enum ConsoleAssets {
    /// The console's files, in path order.
    public static let files: [ConsoleAsset] = [
        ConsoleAsset(path: "console.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.console_css),
        ConsoleAsset(
            path: "console.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.console_js),
        ConsoleAsset(path: "index.html", contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        ConsoleAsset(
            path: "relays.js", contentType: "text/javascript; charset=utf-8", bytes: PackageResources.relays_js),
    ]

    /// Headers on every console response. The page may talk to its own origin only: no outside
    /// script, style, font, image or connection, no inline script, no framing, no referrer.
    public static let securityHeaders: [String: String] = [
        "Content-Security-Policy":
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cache-Control": "no-cache",
    ]

    /// The asset named `name` (`index.html`, `console.js`, …), if there is one.
    public static func asset(named name: String) -> ConsoleAsset? { files.first { $0.path == name } }

    /// Whether `path` (without the query) belongs to the console: `/console` or `/console/…`.
    public static func handles(path: String) -> Bool { path == "/console" || path.hasPrefix("/console/") }

    /// The answer to `GET path` (the query already removed): the page at `/console` and
    /// `/console/`, a file at `/console/NAME`, 404 for anything else under `/console/`, and nil
    /// for paths outside the console. No authentication: the files hold no data; the page asks
    /// for a token and sends it to the API.
    public static func response(forPath path: String) -> ConsoleResponse? {
        guard handles(path: path) else { return nil }
        let name: String =
            switch path {
            case "/console", "/console/": "index.html"
            default: String(path.dropFirst("/console/".count))
            }
        guard let asset = asset(named: name) else {
            var headers = securityHeaders
            headers["Content-Type"] = "text/plain; charset=utf-8"
            return ConsoleResponse(status: 404, headers: headers, body: Array("not found\n".utf8))
        }
        var headers = securityHeaders
        headers["Content-Type"] = asset.contentType
        return ConsoleResponse(status: 200, headers: headers, body: Array(asset.body.utf8))
    }
}
