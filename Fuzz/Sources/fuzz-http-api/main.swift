import ChannelAPI
import Foundation
import FuzzInput
import HeraldChannels
import HeraldMHD
import HeraldServer
import Router

// libFuzzer target for the HTTP API (issue 21): raw HTTP/1.1 request bytes → `ServerRequest` →
// `HeraldAPI.handle`, checking http-api.md's promises on every answer and trapping when one fails.

/// The two API tokens (secrets never to be echoed): one with every scope in `default` and `team-*`,
/// one with only `read` in `default`.
private let adminSecret = "hrd_fuzzAdminSecret7Qx"
private let readerSecret = "hrd_fuzzReaderSecret3Kw"
private let secrets = [adminSecret, readerSecret]

/// The `server:` settings: a small burst and a slow refill so that `x-fuzz-repeat` reaches the 429.
private let serverConfig: ServerConfig = {
    func token(_ name: String, _ secret: String, _ namespaces: [String], _ scopes: Set<String>) -> APIToken {
        APIToken(name: name, sha256: TokenAuthenticator.sha256Hex(of: secret), namespaces: namespaces, scopes: scopes)
    }
    var server = ServerConfig()
    server.port = 0
    server.tokens = [
        token("admin", adminSecret, ["default", "team-*"], ["send", "devices", "events", "read", "metrics"]),
        token("reader", readerSecret, ["default"], ["read"]),
    ]
    server.ratePerSecond = 0.001
    server.burst = 2
    server.metricsPublic = false
    return server
}()

/// Drops log lines: the fuzzer's output is its own.
private struct DiscardingLogSink: LogSink {
    func write(_ record: LogRecord) {}
}

/// Runs `body` to completion from the fuzzer's synchronous thread.
private func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Locked<T?>(nil)
    Task {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0 }!
}

/// A minimal lock for `blocking`'s result.
private final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// The store's directory, one per process. libFuzzer ends with `_exit` (no `atexit` handlers), so
/// the setup removes the directories of earlier runs whose process is gone instead.
private let temporary = FileManager.default.temporaryDirectory
private let home = temporary.appendingPathComponent("herald-fuzz-http-\(getpid())").path

/// Removes `herald-fuzz-http-<pid>` directories whose process no longer exists.
private func removeStaleStores() {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
    for name in names where name.hasPrefix("herald-fuzz-http-") {
        guard let pid = Int32(name.dropFirst("herald-fuzz-http-".count)), kill(pid, 0) != 0, errno == ESRCH
        else { continue }
        try? FileManager.default.removeItem(atPath: temporary.appendingPathComponent(name).path)
    }
}

/// Set up once per process: a router on a temporary SQLite store (a `log` channel writing to
/// /dev/null, a `webpush` channel for the VAPID key route, one route) and the API over it.
private let api: HeraldAPI? = blocking { () -> HeraldAPI? in
    removeStaleStores()
    try? FileManager.default.removeItem(atPath: home)
    guard (try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)) != nil else {
        return nil
    }
    let text = """
        version: 1
        store: { path: \(home)/herald.db }
        channels:
          console: { type: log, path: /dev/null }
          webpush: { type: webpush, vapid: { subject: "mailto:ops@example.com" } }
        routes:
          default:
            - deliver: [console]
        """
    let registry = HeraldChannels.registry
    do {
        let config = try ConfigLoader.parse(text, environment: [:], registry: registry)
        let router = try await Router(
            config: config, registry: registry, options: RouterOptions(logSink: DiscardingLogSink(), environment: [:]))
        return HeraldAPI(router: router, server: serverConfig, now: { 1000 })
    } catch {
        FileHandle.standardError.write(Data("fuzz-http-api: setup failed: \(error)\n".utf8))
        return nil
    }
}

// MARK: Request parsing (what libmicrohttpd does before the handler sees the request)

/// Percent-decodes like libmicrohttpd's `MHD_http_unescape`: `%XX` with two hex digits becomes the
/// byte, anything else stays; `+` is a space in query arguments. The result is read as a C string
/// (cut at the first NUL, invalid UTF-8 repaired), as the server's `String(cString:)` does.
private func unescape<S: Collection>(_ bytes: S, plusIsSpace: Bool) -> String where S.Element == UInt8 {
    func hex(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: b - 48
        case 65...70: b - 55
        case 97...102: b - 87
        default: nil
        }
    }
    let input = Array(bytes)
    var out: [UInt8] = []
    out.reserveCapacity(input.count)
    var i = 0
    while i < input.count {
        let b = input[i]
        if b == 37, i + 2 < input.count, let h = hex(input[i + 1]), let l = hex(input[i + 2]) {
            out.append(h << 4 | l)
            i += 3
        } else {
            out.append(plusIsSpace && b == 43 ? 32 : b)
            i += 1
        }
    }
    if let nul = out.firstIndex(of: 0) { out.removeSubrange(nul...) }
    return String(decoding: out, as: UTF8.self)
}

/// Splits raw bytes into a request: `METHOD SP TARGET [SP VERSION]`, header lines up to an empty
/// line (CRLF or LF), then the body. Every byte string is a request; the repeat count comes from an
/// `x-fuzz-repeat` header (1–4), which the server never sees.
private func parseRequest(_ bytes: [UInt8]) -> (ServerRequest, repeats: Int) {
    var lines: [ArraySlice<UInt8>] = []
    var start = 0
    var bodyStart = bytes.count
    var i = 0
    while i < bytes.count {
        if bytes[i] == 10 {
            var line = bytes[start..<i]
            if line.last == 13 { line = line.dropLast() }
            start = i + 1
            if line.isEmpty, !lines.isEmpty {
                bodyStart = start
                break
            }
            lines.append(line)
        }
        i += 1
    }
    if bodyStart == bytes.count, start < bytes.count { lines.append(bytes[start...]) }
    let requestLine = lines.first ?? []
    let parts = requestLine.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: true)
    let method = parts.first.map { unescape($0, plusIsSpace: false) } ?? "GET"
    let target = parts.count > 1 ? parts[1] : Array("/".utf8)[...]
    let pathBytes: ArraySlice<UInt8>
    var query: [String: String] = [:]
    if let q = target.firstIndex(of: 63) {
        pathBytes = target[target.startIndex..<q]
        for pair in target[(q + 1)...].split(separator: 38, omittingEmptySubsequences: true) {
            let name: String
            let value: String
            if let eq = pair.firstIndex(of: 61) {
                name = unescape(pair[pair.startIndex..<eq], plusIsSpace: true)
                value = unescape(pair[(eq + 1)...], plusIsSpace: true)
            } else {
                name = unescape(pair, plusIsSpace: true)
                value = ""
            }
            if query[name] == nil { query[name] = value }
        }
    } else {
        pathBytes = target
    }
    var headers: [String: String] = [:]
    var repeats = 1
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: 58) else { continue }
        let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).lowercased()
            .trimmingCharacters(in: .whitespaces)
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if name == "x-fuzz-repeat" {
            repeats = min(max(Int(value) ?? 1, 1), 4)
            continue
        }
        headers[name] = headers[name].map { $0 + ", " + value } ?? value
    }
    let body = Array(bytes[min(bodyStart, bytes.count)...])
    var request = ServerRequest(
        method: method, path: unescape(pathBytes, plusIsSpace: false), query: query, headers: headers, body: body)
    // `GET …/action` waits up to `timeout` seconds (30 by default) for an event that no one sends
    // here: make a valid wait zero so that one input is one quick call.
    let timeout = request.query["timeout"]
    if timeout == nil || timeout.flatMap({ Int($0) }).map({ (1...300).contains($0) }) == true {
        request.query["timeout"] = "0"
    }
    return (request, repeats)
}

// MARK: The contract (http-api.md)

/// The statuses http-api.md lists (routes and errors; 413 comes from the server, not the API).
private let statuses: Set<Int> = [200, 201, 202, 204, 400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 503]
/// The error codes http-api.md's error table allows for each status.
private let codes: [Int: Set<String>] = [
    400: ["invalid_json", "invalid_parameter"], 401: ["unauthorized"], 403: ["forbidden"], 404: ["not_found"],
    405: ["method_not_allowed"], 409: ["conflict"], 413: ["payload_too_large"], 415: ["unsupported_media_type"],
    422: ["invalid_device", "invalid_notification", "invalid_event", "invalid_update"],
    // A stream handed to the fuzzer is finished but never closed by a socket, so it keeps its
    // token's slot: past max-streams-per-token the API answers too_many_streams.
    429: ["rate_limited", "too_many_streams", "too_many_long_polls"],
    503: ["unavailable"],
]

/// Traps with a message naming the request and the broken promise.
private func violated(_ what: String, _ request: ServerRequest, _ response: ServerResponse) -> Never {
    let body = String(decoding: response.bodyBytes.prefix(2000), as: UTF8.self)
    FileHandle.standardError.write(
        Data(
            "fuzz-http-api: \(what)\n  request: \(request)\n  status: \(response.status)\n  headers: \(response.headers)\n  body: \(body)\n"
                .utf8))
    abort()
}

/// Whether a configured secret could legitimately appear in an answer: the request carries it
/// somewhere other than the Authorization header (stored data, ids, messages may echo it), or the
/// body has a `\u` escape that could spell it.
private func mayEcho(_ request: ServerRequest) -> Bool {
    let body = String(decoding: request.body, as: UTF8.self)
    var texts = [request.path, request.method, body]
    texts += request.query.flatMap { [$0.key, $0.value] }
    texts += request.headers.filter { $0.key != "authorization" }.flatMap { [$0.key, $0.value] }
    return body.contains("\\u") || texts.contains { t in secrets.contains { t.contains($0) } }
}

private func check(_ request: ServerRequest, _ response: ServerResponse) {
    let status = response.status
    guard statuses.contains(status) else { violated("status \(status) is not in http-api.md", request, response) }
    if case .stream(let stream) = response.body {
        stream.finish()
        guard status == 200 else { violated("a stream with status \(status)", request, response) }
    }
    if status >= 400, !(request.path == "/healthz" && status == 503) {
        guard let json = try? JSONValue.parse(response.bodyBytes), let error = json["error"],
            let code = error["code"]?.stringValue, error["message"]?.stringValue != nil
        else { violated("an error that is not {\"error\":{\"code\",\"message\"}}", request, response) }
        guard codes[status]?.contains(code) == true else {
            violated("code \(code) is not http-api.md's code for \(status)", request, response)
        }
        guard response.header("Content-Type")?.hasPrefix("application/json") == true else {
            violated("an error without Content-Type: application/json", request, response)
        }
    }
    switch status {
    case 401:
        guard response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true else {
            violated("a 401 without WWW-Authenticate: Bearer", request, response)
        }
    case 405:
        guard let allow = response.header("Allow"), !allow.isEmpty else {
            violated("a 405 without Allow", request, response)
        }
    case 429:
        guard let wait = response.header("Retry-After"), let n = Int(wait), n >= 0 else {
            violated("a 429 without a Retry-After in seconds", request, response)
        }
    default: break
    }
    if !mayEcho(request) {
        let body = String(decoding: response.bodyBytes, as: UTF8.self)
        for secret in secrets {
            if body.contains(secret) || response.headers.contains(where: { $0.value.contains(secret) }) {
                violated("the token \(secret) appears in the answer", request, response)
            }
        }
    }
}

/// `FUZZ_HTTP_TRACE=1` prints each request and its answer (to look at what a seed reaches).
private let trace = ProcessInfo.processInfo.environment["FUZZ_HTTP_TRACE"] != nil

/// libFuzzer entry: one raw HTTP/1.1 request, answered `x-fuzz-repeat` times (the rate limit is
/// reset first, so an input always gets the same answers from the limiter).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPAPI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let api else { return 0 }
    let (request, repeats) = parseRequest(Array(UnsafeBufferPointer(start: data, count: size)))
    api.reload(server: serverConfig)
    for _ in 0..<repeats {
        let response = blocking { await api.handle(request) }
        if trace {
            let body = String(decoding: response.bodyBytes.prefix(160), as: UTF8.self)
            print("\(request.method) \(request.path) \(request.query) → \(response.status) \(body)")
        }
        check(request, response)
    }
    return 0
}
