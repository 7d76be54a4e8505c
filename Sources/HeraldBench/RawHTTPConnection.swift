import Foundation

/// A blocking HTTP/1.1 keep-alive connection on a plain TCP socket, one per client thread: the
/// Pulse bench's load generator. Its whole cost per request is a `send` and a `recv` or two, so the
/// client leaves the shared cores to the relay it measures (through libcurl's multi interface the
/// bench client took about 0.08 ms of CPU per push, a quarter of the relay's own; `wrk` plays this
/// part in the hapi bench, but cannot sign each request).
///
/// Plain HTTP to a numeric IPv4 address only (the bench's `herald serve` on 127.0.0.1); answers are
/// read by their `Content-Length`. A broken connection is reopened on the next request.
final class RawHTTPConnection {
    let host: String
    let port: UInt16
    private var socket: Int32 = -1
    /// Bytes read and not yet consumed (the start of the next answer, if the server sent ahead).
    private var pending: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 16 * 1024)

    /// A connection to `base` (`http://127.0.0.1:PORT`); nil for another shape of URL.
    init?(base: String) {
        guard base.hasPrefix("http://") else { return nil }
        let hostPort = base.dropFirst("http://".count).split(separator: "/", maxSplits: 1).first ?? ""
        let parts = hostPort.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]) else { return nil }
        host = String(parts[0])
        self.port = port
    }

    deinit { close() }

    /// The head of a request to this server: `METHOD PATH HTTP/1.1`, `Host`, the given headers and
    /// `Content-Length`, then the blank line.
    func head(method: String, path: String, headers: [(String, String)], bodyCount: Int) -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return head + "Content-Length: \(bodyCount)\r\n\r\n"
    }

    /// Sends one whole request (head and body) and reads its answer: the status, or nil when the
    /// connection failed (it is closed and reopened by the next call).
    func roundTrip(_ request: [UInt8]) -> Int? {
        if socket < 0, !open() { return nil }
        guard write(request), let status = readAnswer() else {
            close()
            return nil
        }
        return status
    }

    private func open() -> Bool {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            Glibc.close(fd)
            return false
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            return false
        }
        socket = fd
        pending.removeAll(keepingCapacity: true)
        return true
    }

    private func close() {
        if socket >= 0 { Glibc.close(socket) }
        socket = -1
    }

    private func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + sent, bytes.count - sent, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// Reads more bytes into `pending`; false at the end of the stream or on an error.
    private func fill() -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.recv(socket, $0.baseAddress!, $0.count, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            pending += chunk[0..<n]
            return true
        }
    }

    /// One answer: the status line's code, its body skipped by `Content-Length`.
    private func readAnswer() -> Int? {
        var headEnd: Int?
        while true {
            headEnd = Self.endOfHead(pending)
            if headEnd != nil { break }
            guard pending.count < 64 * 1024, fill() else { return nil }
        }
        guard let end = headEnd, let (status, length) = Self.parseHead(pending[0..<end]) else { return nil }
        while pending.count < end + length { guard fill() else { return nil } }
        pending.removeFirst(end + length)
        return status
    }

    /// The index just past the `\r\n\r\n` ending the head, if it has arrived.
    static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 3..<bytes.count
        where bytes[i] == 10 && bytes[i - 1] == 13 && bytes[i - 2] == 10 && bytes[i - 3] == 13 {
            return i + 1
        }
        return nil
    }

    /// The status code and `Content-Length` (0 when absent) of an answer's head.
    static func parseHead(_ head: ArraySlice<UInt8>) -> (status: Int, length: Int)? {
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n")
        guard let first = lines.first else { return nil }
        let words = first.split(separator: " ")
        guard words.count >= 2, words[0].hasPrefix("HTTP/1."), let status = Int(words[1]) else { return nil }
        var length = 0
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == "content-length" {
                guard let n = Int(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)), n >= 0
                else { return nil }
                length = n
            }
        }
        return (status, length)
    }
}
