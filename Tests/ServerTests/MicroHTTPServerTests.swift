import Dispatch
import Foundation
import HeraldHTTPTesting
import HeraldMHD
import HeraldSync
import Testing

/// The libmicrohttpd wrapper on its own: a handler that ignores cancellation cannot keep a
/// connection suspended at stop (libmicrohttpd aborts the process if one is), and a stream is fed
/// from Swift while the client reads.
@Suite struct MicroHTTPServerTests {
    @Test func stopAnswersAHandlerThatIgnoresCancellation() async throws {
        let started = Locked(false)
        let server = try MicroHTTPServer(host: "127.0.0.1", port: 0) { _ in
            started.withLock { $0 = true }
            // Not cancellable: returns after 60 s whatever happens (long enough that the stop, which
            // answers within about 5 s, comes first even under ThreadSanitizer on a loaded machine).
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().asyncAfter(deadline: .now() + 60) { c.resume() }
            }
            return ServerResponse(status: 200, body: .bytes(Array("late".utf8)))
        }
        let port = server.port
        async let answer = RawHTTP.request(port: port, "GET", "/slow")
        // Stop only once the handler runs (a loaded machine can take seconds to get there).
        for _ in 0..<6_000 where !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(started.withLock { $0 })
        await server.stop(grace: .milliseconds(100))
        // The stop's 503, not the handler's late 200: the connection was resumed by the stop.
        let response = try await answer
        #expect(response.status == 503)
    }

    @Test func aStreamIsWrittenWhileTheClientReads() async throws {
        let stream = ResponseStream()
        let server = try MicroHTTPServer(host: "127.0.0.1", port: 0) { _ in
            ServerResponse(status: 200, headers: [("Content-Type", "text/plain")], body: .stream(stream))
        }
        let port = server.port
        let reader = Task {
            try await RawHTTP.offPool { () -> [String] in
                let c = try RawConnection(port: port)
                try c.send("GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try c.readHead()
                var parts: [String] = []
                while let chunk = try c.readChunk() { parts.append(String(decoding: chunk, as: UTF8.self)) }
                return parts
            }
        }
        // Nothing to send for a while: the connection is suspended, not spinning.
        try await Task.sleep(for: .milliseconds(300))
        #expect(stream.write(Array("one".utf8)))
        try await Task.sleep(for: .milliseconds(100))
        #expect(stream.write(Array("two".utf8)))
        stream.finish()
        let parts = try await reader.value
        #expect(parts.joined() == "onetwo")
        // Once the response is over, writes are refused.
        for _ in 0..<100 where !stream.isClosed { try await Task.sleep(for: .milliseconds(10)) }
        #expect(stream.isClosed)
        #expect(!stream.write(Array("three".utf8)))
        await server.stop()
    }

    @Test func listensOnIPv6Loopback() async throws {
        let server = try MicroHTTPServer(host: "::1", port: 0) { request in
            ServerResponse(status: 200, body: .bytes(Array("v6 \(request.path) \(request.query["a"] ?? "-")".utf8)))
        }
        let port = server.port
        let r = try await RawHTTP.offPool {
            try Subprocess.run(executable: "curl", arguments: ["-sS", "-g", "http://[::1]:\(port)/p%20q?a=b%26c"])
        }
        await server.stop()
        #expect(r.code == 0, "\(r.stderr)")
        #expect(r.stdout == "v6 /p q b&c")
    }

    @Test func aNonNumericListenAddressIsRefused() {
        #expect(throws: ServerError.self) {
            _ = try MicroHTTPServer(host: "localhost", port: 0) { _ in ServerResponse(status: 200) }
        }
    }
}
