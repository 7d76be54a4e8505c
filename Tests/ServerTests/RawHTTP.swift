import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A response read off the wire.
struct RawResponse: Sendable {
    var status: Int
    /// Header names in lower case.
    var headers: [String: String]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
}

struct RawHTTPError: Error, CustomStringConvertible {
    let description: String
}

/// A blocking HTTP/1.1 client over a plain socket, run off the Swift concurrency pool (the server under
/// test may run in-process and needs that pool). It can also send malformed bytes and read streams.
/// Reads wait up to 180 s by default: in a full test run other suites can hold the concurrency pool
/// (and so the router's delivery tasks) for tens of seconds.
final class RawConnection: @unchecked Sendable {
    let fd: Int32
    var pending: [UInt8] = []
    static let queue = DispatchQueue(label: "raw-http", attributes: .concurrent)

    /// Connects to 127.0.0.1:`port`, from the loopback address `source` when given (127.0.0.2, …:
    /// another client address for the server's per-client limits).
    init(port: Int, timeout: Double = 180, source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - floor(timeout)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let b = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            // No close(fd) before a throw here: the instance is whole, so deinit closes it, and a
            // second close would close whatever took the number meanwhile (another test's server).
            guard b == 0 else { throw RawHTTPError(description: "bind to \(source) failed: \(errno)") }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard r == 0 else { throw RawHTTPError(description: "connect failed: \(errno)") }
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawHTTPError(description: "send failed: \(errno)") }
            off += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes into `pending`; false on end of stream, error or timeout.
    func fill() -> Bool {
        var buf = [UInt8](repeating: 0, count: 65536)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        pending.append(contentsOf: buf[0..<n])
        return true
    }

    func readLine() throws -> String {
        while true {
            if let i = pending.firstIndex(of: 0x0A) {
                var line = Array(pending[..<i])
                pending.removeFirst(i + 1)
                if line.last == 0x0D { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard fill() else { throw RawHTTPError(description: "connection ended before a line") }
        }
    }

    func readExactly(_ n: Int) throws -> [UInt8] {
        while pending.count < n {
            guard fill() else { throw RawHTTPError(description: "connection ended in a body") }
        }
        let out = Array(pending[..<n])
        pending.removeFirst(n)
        return out
    }

    /// Reads a status line and headers.
    func readHead() throws -> (status: Int, headers: [String: String]) {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw RawHTTPError(description: "bad status line: \(statusLine)")
        }
        var headers: [String: String] = [:]
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        return (status, headers)
    }

    /// The next chunk of a chunked body (nil at its end).
    func readChunk() throws -> [UInt8]? {
        let sizeLine = try readLine()
        guard let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) else {
            throw RawHTTPError(description: "bad chunk size: \(sizeLine)")
        }
        if size == 0 {
            _ = try? readLine()
            return nil
        }
        let data = try readExactly(size)
        _ = try readLine()
        return data
    }

    /// Reads one whole response (Content-Length, chunked, or none for 204/HEAD).
    func readResponse(head: Bool = false) throws -> RawResponse {
        let (status, headers) = try readHead()
        var body: [UInt8] = []
        if head || status == 204 || status == 304 {
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            while let chunk = try readChunk() { body += chunk }
        } else if let length = headers["content-length"].flatMap({ Int($0) }) {
            body = try readExactly(length)
        } else {
            while fill() {}
            body = pending
            pending = []
        }
        return RawResponse(status: status, headers: headers, body: body)
    }

    /// Whether the server closes the connection without sending another byte (within the receive
    /// timeout).
    func closesWithoutMore() -> Bool {
        guard pending.isEmpty else { return false }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { return true }
        return n < 0 && errno == ECONNRESET
    }

    /// Whether the server closed the connection within the receive timeout.
    func isClosedByPeer() -> Bool {
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }
}

enum RawHTTP {
    /// Runs blocking socket work on a dispatch queue, off the concurrency pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { c in
            RawConnection.queue.async { c.resume(with: Result { try body() }) }
        }
    }

    /// One request on a new connection.
    static func request(
        port: Int, _ method: String, _ path: String, token: String? = nil, headers: [String: String] = [:],
        body: [UInt8]? = nil, json: String? = nil, timeout: Double = 180
    ) async throws -> RawResponse {
        var h = headers
        var payload = body
        if let json {
            payload = Array(json.utf8)
            if h["Content-Type"] == nil { h["Content-Type"] = "application/json" }
        }
        if let token { h["Authorization"] = "Bearer \(token)" }
        let finalHeaders = h
        let finalBody = payload
        return try await offPool {
            let c = try RawConnection(port: port, timeout: timeout)
            var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            for (k, v) in finalHeaders.sorted(by: { $0.key < $1.key }) { text += "\(k): \(v)\r\n" }
            if let finalBody { text += "Content-Length: \(finalBody.count)\r\n" }
            text += "\r\n"
            try c.send(Array(text.utf8) + (finalBody ?? []))
            return try c.readResponse(head: method == "HEAD")
        }
    }
}

/// A Server-Sent Events reader on its own connection.
final class SSEClient: @unchecked Sendable {
    struct Event: Equatable {
        var id: Int64?
        var event: String
        var data: String
    }

    let connection: RawConnection
    var buffer = ""
    let head: (status: Int, headers: [String: String])

    private init(connection: RawConnection, head: (status: Int, headers: [String: String])) {
        self.connection = connection
        self.head = head
    }

    static func open(port: Int, path: String, token: String?, lastEventID: Int64? = nil) async throws -> SSEClient {
        try await RawHTTP.offPool {
            let c = try RawConnection(port: port, timeout: 180)
            var text = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
            if let token { text += "Authorization: Bearer \(token)\r\n" }
            if let lastEventID { text += "Last-Event-ID: \(lastEventID)\r\n" }
            text += "\r\n"
            try c.send(text)
            return SSEClient(connection: c, head: try c.readHead())
        }
    }

    /// Reads events (and comments, as event "comment") until `until` says stop or time runs out.
    func read(until done: @escaping @Sendable ([Event]) -> Bool, timeout: Double = 180) async throws -> [Event] {
        try await RawHTTP.offPool {
            var events: [Event] = []
            let end = Date().addingTimeInterval(timeout)
            while !done(events) {
                guard Date() < end else { throw RawHTTPError(description: "timed out with \(events)") }
                if let chunk = try self.connection.readChunk() {
                    self.buffer += String(decoding: chunk, as: UTF8.self)
                } else {
                    return events
                }
                while let range = self.buffer.range(of: "\n\n") {
                    let block = String(self.buffer[..<range.lowerBound])
                    self.buffer.removeSubrange(..<range.upperBound)
                    var e = Event(id: nil, event: "message", data: "")
                    for line in block.split(separator: "\n") {
                        if line.hasPrefix(":") {
                            e.event = "comment"
                            e.data = line.dropFirst().trimmingCharacters(in: .whitespaces)
                        } else if line.hasPrefix("id: ") {
                            e.id = Int64(line.dropFirst(4))
                        } else if line.hasPrefix("event: ") {
                            e.event = String(line.dropFirst(7))
                        } else if line.hasPrefix("data: ") {
                            e.data = String(line.dropFirst(6))
                        }
                    }
                    events.append(e)
                }
            }
            return events
        }
    }

    /// Disconnects (both directions).
    func close() { shutdown(connection.fd, Int32(SHUT_RDWR)) }
}
