import ChannelAPI
import Foundation
import RouterTesting
import Testing

/// RouterTesting's in-process transport: routes, sequences, delays, timeouts and transport errors
/// behave as the fake server the channel tests used before (FakeHTTPServer's `route` rules).
@Suite struct ScriptedTransportTests {
    static func status(_ result: Result<HTTPResponse, HTTPError>) -> String {
        switch result {
        case .success(let r): "\(r.status) \(r.bodyText)"
        case .failure(let e): e.code.rawValue
        }
    }

    func send(_ http: ScriptedTransport, _ url: String, method: String = "POST") async -> String {
        await send(http, HTTPRequest(method: method, url: url))
    }

    func send(_ http: ScriptedTransport, _ request: HTTPRequest) async -> String {
        do {
            let r = try await http.send(request)
            return "\(r.status) \(r.bodyText)"
        } catch {
            return error.code.rawValue
        }
    }

    @Test func longestPrefixWinsAndAMethodBeatsNoneAtTheSameLength() async {
        let http = ScriptedTransport()
        http.route("/v1/", [.json(200, "short")])
        http.route("/v1/send", [.json(200, "long")])
        http.route("/v1/send", method: "POST", [.json(200, "long-post")])
        http.route("https://b.example/v1/", [.json(200, "host-b")])
        #expect(await send(http, "https://a.example/v1/other") == "200 short")
        #expect(await send(http, "https://a.example/v1/send?x=1") == "200 long-post")
        #expect(await send(http, "https://a.example/v1/send", method: "GET") == "200 long")
        // A URL prefix tells hosts apart; it is longer than the path prefixes it competes with.
        #expect(await send(http, "https://b.example/v1/other") == "200 host-b")
        #expect(await send(http, "https://a.example/none") == "404 ")
        #expect(http.requests.map(\.path) == ["/v1/other", "/v1/send?x=1", "/v1/send", "/v1/other", "/none"])
    }

    @Test func responsesAreServedInOrderAndTheLastRepeats() async {
        let http = ScriptedTransport()
        http.route("/", [.json(500, "a"), .error(.connectFailed), .json(200, "c")])
        var answers: [String] = []
        for _ in 0..<4 { answers.append(await send(http, "https://x.example/")) }
        #expect(answers == ["500 a", "connectFailed", "200 c", "200 c"])
        // Setting the route again restarts its sequence; reset forgets requests, not routes.
        http.reset()
        #expect(http.requests.isEmpty)
        #expect(await send(http, "https://x.example/") == "200 c")
        http.route("/", [.json(201, "again")])
        #expect(await send(http, "https://x.example/") == "201 again")
        http.route("/", [])
        #expect(await send(http, "https://x.example/") == "404 ")
        #expect(http.requests.count == 3)
    }

    @Test func fixedAnswersAreNotRecordedAndAnswerTakesTheRest() async {
        let http = ScriptedTransport { request in
            request.url.hasPrefix("https://oauth.example/") ? .success(HTTPResponse(status: 200)) : nil
        } answer: { _ in
            .success(HTTPResponse(status: 503))
        }
        http.route("/routed", [.json(202, "")])
        #expect(await send(http, "https://oauth.example/token") == "200 ")
        #expect(await send(http, "https://x.example/routed") == "202 ")
        #expect(await send(http, "https://x.example/other") == "503 ")
        #expect(http.requests.map(\.url) == ["https://x.example/routed", "https://x.example/other"])
    }

    /// (No upper bound on the time: under the full suite's load a 300 ms sleep has taken 40 s.)
    @Test func sendAllAnswersInRequestOrderAfterTheDelays() async {
        let http = ScriptedTransport()
        http.route("/slow", [ScriptedResponse(status: 200, body: Array("slow".utf8), delay: .milliseconds(300))])
        http.route("/fast", [.json(201, "fast")])
        let urls = ["/slow", "/fast", "/slow", "/slow"].map { "https://x.example" + $0 }
        let started = ContinuousClock.now
        let results = await http.send(all: urls.map { HTTPRequest(url: $0) }, maxInFlight: 4)
        let elapsed = ContinuousClock.now - started
        #expect(results.map(Self.status) == ["200 slow", "201 fast", "200 slow", "200 slow"])
        #expect(http.requests.map(\.url) == urls)
        #expect(elapsed >= .milliseconds(300))
    }

    @Test func aDelayLongerThanTheRequestTimeoutIsATimeout() async {
        let http = ScriptedTransport()
        http.route("/", [ScriptedResponse(status: 200, delay: .seconds(30))])
        // Waiting out the 30 s delay would answer 200: `timeout` shows the wait was cut.
        let direct = await send(http, HTTPRequest(url: "https://x.example/", timeout: .milliseconds(50)))
        // The router's timeout scope cuts the request's timeout, as a real transport does.
        let scoped = await RequestTimeoutScope.$limit.withValue(.milliseconds(50)) {
            await http.send(all: [HTTPRequest(url: "https://x.example/")], maxInFlight: 1)
        }
        #expect(direct == "timeout")
        #expect(scoped.map(Self.status) == ["timeout"])
        #expect(http.requests.last?.timeout == .milliseconds(50))
    }

    @Test func cancellingTheCallerCancelsADelayedAnswer() async {
        let http = ScriptedTransport()
        http.route("/", [ScriptedResponse(status: 200, delay: .seconds(30))])
        let task = Task { await self.send(http, "https://x.example/") }
        while http.requests.isEmpty { try? await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        #expect(await task.value == "cancelled")
    }

    @Test func requestPathAndHeaders() {
        let r = HTTPRequest(
            url: "https://user@x.example:8443/bot1:AA/sendMessage?x=1", headers: [HTTPHeader("Apns-ID", "42")],
            body: Array("hé".utf8))
        #expect(r.path == "/bot1:AA/sendMessage?x=1")
        #expect(r.header("apns-id") == "42")
        #expect(r.header("missing") == nil)
        #expect(r.bodyText == "hé")
        #expect(HTTPRequest(url: "https://x.example").path == "/")
        #expect(HTTPRequest(url: "https://x.example?q=1").path == "/?q=1")
    }
}
