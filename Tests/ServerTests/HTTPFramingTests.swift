import Foundation
import HeraldServer
import Testing

/// Issue 30, items 5 and 7: ambiguous request framing is refused before libmicrohttpd acts on it
/// (400 or 501, in JSON, and the connection closed, so bytes after it never become a request), a
/// `HEAD` answer has no body, and heads or targets over their limits get JSON instead of
/// libmicrohttpd's HTML. Every case on a raw socket.
@Suite struct HTTPFramingTests {
    /// Sends `bytes` on a new connection; returns the first response and whether the server then
    /// closed the connection without sending anything more.
    static func exchange(_ port: Int, _ bytes: String) async throws -> (response: RawResponse, closed: Bool) {
        try await RawHTTP.offPool {
            let c = try RawConnection(port: port)
            try c.send(bytes)
            let response = try c.readResponse()
            return (response, c.closesWithoutMore())
        }
    }

    static let auth = "Authorization: Bearer \(ServerHarness.admin)\r\n"
    static let smuggled = "GET /v1/notifications/x HTTP/1.1\r\nHost: x\r\n\(auth)\r\n"

    @Test func contentLengthWithChunkedIsRefusedAndTheConnectionClosed() async throws {
        try await withServer { h in
            // The chunked body ends at once; with the Content-Length reading, the smuggled request
            // would be body. Either way, nothing after the head may be served.
            let body = "0\r\n\r\n" + Self.smuggled
            let (r, closed) = try await Self.exchange(
                h.port,
                "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\nTransfer-Encoding: chunked\r\n\r\n\(body)")
            #expect(r.status == 400)
            #expect(r.errorCode == "bad_request")
            #expect(r.headers["connection"]?.lowercased() == "close")
            #expect(closed, "the bytes after the request were served")
        }
    }

    @Test func twoContentLengthsAreRefused() async throws {
        try await withServer { h in
            let (r, closed) = try await Self.exchange(
                h.port,
                "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Type: application/json\r\n"
                    + "Content-Length: 2\r\nContent-Length: 13\r\n\r\n{}" + #"{"title":"a"}"#)
            #expect(r.status == 400)
            #expect(r.errorCode == "bad_request")
            #expect(closed)
            #expect(try h.router.history(limit: 10).isEmpty)
        }
    }

    @Test(arguments: ["gzip", "gzip, chunked", "identity"])
    func anUnknownTransferEncodingGets501AndAClose(_ coding: String) async throws {
        try await withServer { h in
            // Without the check libmicrohttpd waits for a body it cannot delimit until a timeout.
            let (r, closed) = try await Self.exchange(
                h.port,
                "POST /v1/notifications HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Type: application/json\r\n"
                    + "Transfer-Encoding: \(coding)\r\n\r\n{}")
            #expect(r.status == 501)
            #expect(r.errorCode == "not_implemented")
            #expect(closed)
        }
    }

    @Test func aHeadAnswerToTheEventStreamHasNoBody() async throws {
        try await withServer { h in
            let (head, next) = try await RawHTTP.offPool { [port = h.port] in
                let c = try RawConnection(port: port)
                // Two requests on one connection: the second answer must start right after the first
                // head (a chunk terminator there would be read as its status line).
                try c.send("HEAD /v1/events HTTP/1.1\r\nHost: x\r\n\(Self.auth)\r\n")
                let head = try c.readHead()
                try c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return (head, try c.readResponse())
            }
            #expect(head.status == 200)
            #expect(head.headers["content-type"] == "text/event-stream")
            #expect(next.status == 200)
            #expect(next.json?["status"] as? String == "ok")
        }
    }

    @Test func aHeadOverTheLimitGetsJSON431() async throws {
        try await withServer { h in
            // 40 KiB: over Herald's 32 KiB limit, and over libmicrohttpd's default 32 KiB pool (it
            // answered HTML there).
            let (r, closed) = try await Self.exchange(
                h.port, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 40_000))\r\n\r\n")
            #expect(r.status == 431)
            #expect(r.errorCode == "header_too_large")
            #expect(r.headers["content-type"] == "application/json")
            #expect(closed)
        }
    }

    @Test func aTargetOverTheLimitGetsJSON414() async throws {
        try await withServer { h in
            let (r, closed) = try await Self.exchange(
                h.port, "GET /healthz?q=\(String(repeating: "a", count: 10_000)) HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(r.status == 414)
            #expect(r.errorCode == "uri_too_long")
            #expect(closed)
            // Under the limits, the same server answers.
            #expect(try await h.request("GET", "/healthz?q=short", token: nil).status == 200)
        }
    }
}
