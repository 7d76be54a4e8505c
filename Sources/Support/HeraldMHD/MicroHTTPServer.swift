import CMicroHTTPD
import Dispatch
import Foundation
import HeraldSync
import Synchronization

/// An HTTP/1.1 server on GNU libmicrohttpd: requests in, ``ServerResponse`` values out.
///
/// libmicrohttpd runs its own threads (one epoll loop per thread, a pool sized to the cores). A
/// request is read whole (at most ``ServerOptions/maxBody``), then its connection is suspended
/// while the Swift handler runs on the concurrency pool, and resumed to send the answer, so a
/// long-poll or a stream holds no server thread. No libmicrohttpd type is public.
///
/// Three traps are handled here: a content reader with nothing to send suspends its connection
/// instead of returning 0 (which spins); suspended connections never time out, so their owners
/// keep their own timers; and libmicrohttpd's timeout only measures inactivity, so a timer cuts any
/// connection that has not delivered a whole request within ``ServerOptions/requestDeadline``.
public final class MicroHTTPServer: Sendable {
    /// Answers one request.
    public typealias Handler = @Sendable (ServerRequest) async -> ServerResponse

    let handler: Handler
    let options: ServerOptions
    /// The daemon (bit pattern), nil once stopped.
    private let daemon = Locked<Int?>(nil)
    /// Open connections by their pointer's bit pattern, and how many each client address holds.
    let connections = Locked(ConnectionTable())
    /// Requests whose handler is running: the task, and the request's state (to answer it at stop).
    let running = Locked<[ObjectIdentifier: (task: Task<Void, Never>, context: RequestContext)]>([:])
    /// Streams not yet closed.
    let streams = Locked<[ObjectIdentifier: ResponseStream]>([:])
    let stopping = Atomic<Bool>(false)
    /// Set to stop the deadline thread.
    let timerStopped = Atomic<Bool>(false)
    /// The retained reference handed to libmicrohttpd as its callbacks' `cls`.
    private let selfReference = Locked<Int?>(nil)
    /// The port the server listens on (the bound one when 0 was asked for).
    public let port: Int
    /// Whether it serves HTTPS.
    public let isTLS: Bool

    /// Starts listening on `host` (a numeric IPv4 or IPv6 address) and `port` (0: any free port).
    /// Throws ``ServerError`` when the address is not numeric, the port is taken, or TLS is asked
    /// for and libmicrohttpd cannot do it.
    public init(host: String, port: Int, options: ServerOptions = ServerOptions(), handler: @escaping Handler) throws {
        self.handler = handler
        self.options = options
        self.isTLS = options.tls != nil
        guard (0...65535).contains(port) else { throw ServerError("port \(port) is out of range") }
        var flags: UInt32 =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ITC.rawValue
        flags |=
            MHD_is_feature_supported(.FEATURE_EPOLL) == MHD_Result.YES ? MHD_USE_EPOLL.rawValue : MHD_USE_AUTO.rawValue
        if options.tls != nil {
            guard MHD_is_feature_supported(.FEATURE_TLS) == MHD_Result.YES else {
                throw ServerError("this libmicrohttpd was built without TLS; terminate TLS in front of Herald")
            }
            flags |= MHD_USE_TLS.rawValue
        }
        let threads = options.threads > 0 ? options.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        var storage = sockaddr_storage()
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            withUnsafeMutableBytes(of: &storage) { raw in
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sin.pointee.sin_family = sa_family_t(AF_INET)
                sin.pointee.sin_port = in_port_t(UInt16(port).bigEndian)
                sin.pointee.sin_addr = v4
            }
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            flags |= MHD_USE_IPv6.rawValue
            withUnsafeMutableBytes(of: &storage) { raw in
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                sin6.pointee.sin6_port = in_port_t(UInt16(port).bigEndian)
                sin6.pointee.sin6_addr = v6
            }
        } else {
            throw ServerError("listen address '\(host)' is not a numeric IPv4 or IPv6 address")
        }
        MicroHTTPServer.raiseDescriptorLimit(
            to: max(1, options.maxConnections) + max(0, options.reserveConnections) + 256)
        let box = Box()
        let unmanaged = Unmanaged.passRetained(box)
        let cls = unmanaged.toOpaque()
        let cert = options.tls?.certificatePEM
        let key = options.tls?.keyPEM
        let started: OpaquePointer? = withUnsafePointer(to: &storage) { addr in
            addr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                MicroHTTPServer.withOptionalCString(cert) { c in
                    MicroHTTPServer.withOptionalCString(key) { k in
                        herald_mhd_start(
                            flags, sa, MicroHTTPServer.accessCallback, MicroHTTPServer.completedCallback,
                            MicroHTTPServer.notifyCallback, cls, UInt32(threads),
                            UInt32(clamping: max(1, options.idleTimeoutSeconds)),
                            max(32 * 1024, 2 * options.maxHeadBytes),
                            UInt32(clamping: max(1, options.maxConnections) + max(0, options.reserveConnections)), c, k)
                    }
                }
            }
        }
        guard let started else {
            unmanaged.release()
            throw ServerError(
                "cannot listen on \(host.contains(":") ? "[\(host)]" : host):\(port) (address in use, not local, or bad TLS files)"
            )
        }
        self.port = Int(herald_mhd_bound_port(started))
        box.server = self
        let startedBits = Int(bitPattern: started)
        daemon.withLock { $0 = startedBits }
        let clsBits = Int(bitPattern: cls)
        selfReference.withLock { $0 = clsBits }
        startDeadlineTimer()
    }

    /// Holds the server weakly for libmicrohttpd's callbacks, so the retained `cls` does not keep
    /// the server alive (the daemon holds it until ``stop(grace:)``).
    final class Box: @unchecked Sendable {
        weak var server: MicroHTTPServer?
    }

    /// Raises the process's soft limit on open files towards `wanted` (at most to the hard limit), so
    /// ``ServerOptions/maxConnections`` is not cut short by a default of 1024 descriptors.
    static func raiseDescriptorLimit(to wanted: Int) {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(wanted) else { return }
        limit.rlim_cur = min(rlim_t(wanted), limit.rlim_max)
        _ = setrlimit(resource, &limit)
    }

    static func withOptionalCString<T>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let s else { return body(nil) }
        return s.withCString { body($0) }
    }

    /// Whether ``stop(grace:)`` has begun.
    public var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Stops: no new connection is accepted and new requests on open ones get
    /// ``ServerRejection/shuttingDown``; requests in flight get up to `grace` to finish (then their
    /// handlers are cancelled), open streams are finished (those not ending with the server get five
    /// seconds to be finished by their writers), and the daemon stops.
    public func stop(grace: Duration = .seconds(10)) async {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // The quiesced listening socket is closed only after MHD_stop_daemon (libmicrohttpd's
        // rule for threaded modes): closed at once, its number went to the next socket the process
        // opened, often another server's listening socket, which this daemon's threads, still
        // polling the old number, then accepted from (that server saw none of its connections).
        var quiesced: Int32 = -1
        if let d = daemon.withLock({ $0 }) {
            quiesced = MHD_quiesce_daemon(OpaquePointer(bitPattern: d))
        }
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        while clock.now < deadline, !running.withLock({ $0.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for entry in running.withLock({ Array($0.values) }) { entry.task.cancel() }
        for stream in streams.withLock({ Array($0.values) }) where stream.endsWhenServerStops { stream.finish() }
        // Cancelled handlers answer, finished streams flush; wait (bounded) until none is left
        // suspended, since libmicrohttpd must not stop with suspended connections.
        let hard = clock.now + .seconds(5)
        while clock.now < hard, !(running.withLock { $0.isEmpty } && streams.withLock { $0.isEmpty }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        // A handler that ignored its cancellation: its connection is resumed with a 503 here (the
        // handler's own answer, if it ever comes, is dropped), so none stays suspended.
        for entry in running.withLock({ Array($0.values) }) {
            entry.context.answer(options.rejection(.shuttingDown))
        }
        if !running.withLock({ $0.isEmpty }) { try? await Task.sleep(for: .milliseconds(100)) }
        timerStopped.store(true, ordering: .releasing)
        if let d = daemon.withLock({ d -> Int? in
            defer { d = nil }
            return d
        }) {
            MHD_stop_daemon(OpaquePointer(bitPattern: d))
        }
        if quiesced >= 0 { close(quiesced) }
        if let r = selfReference.withLock({ r -> Int? in
            defer { r = nil }
            return r
        }), let p = UnsafeMutableRawPointer(bitPattern: r) {
            Unmanaged<Box>.fromOpaque(p).release()
        }
    }

    // MARK: Callbacks

    static func server(_ cls: UnsafeMutableRawPointer?) -> MicroHTTPServer? {
        guard let cls else { return nil }
        return Unmanaged<Box>.fromOpaque(cls).takeUnretainedValue().server
    }

    static let notifyCallback: MHD_NotifyConnectionCallback = { cls, connection, _, toe in
        guard let server = MicroHTTPServer.server(cls), let connection else { return }
        if toe == .CONNECTION_NOTIFY_STARTED {
            server.connectionStarted(connection)
        } else {
            server.connectionClosed(connection)
        }
    }

    static let completedCallback: MHD_RequestCompletedCallback = { cls, connection, conCls, _ in
        if let conCls, let p = conCls.pointee {
            Unmanaged<RequestContext>.fromOpaque(p).release()
            conCls.pointee = nil
        }
        // The next request on a kept-alive connection starts its deadline now.
        if let server = MicroHTTPServer.server(cls), let connection {
            let key = Int(bitPattern: connection)
            server.connections.withLock { table in
                guard let entry = table.entries[key] else { return }
                entry.since = ContinuousClock.now
                entry.headDone = false
                entry.keptAlive = true
            }
        }
    }

    static let accessCallback: MHD_AccessHandlerCallback = {
        cls, connection, url, method, _, uploadData, uploadSize, conCls in
        guard let server = MicroHTTPServer.server(cls), let connection, let conCls else { return .NO }
        guard let existing = conCls.pointee else {
            let context = RequestContext(
                method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/")
            let fields = headerFields(connection)
            for (name, value) in fields {
                if let old = context.headers[name] {
                    context.headers[name] = old + ", " + value
                } else {
                    context.headers[name] = value
                }
            }
            context.query = values(connection, .GET_ARGUMENT_KIND, lowercase: false, join: false)
            conCls.pointee = Unmanaged.passRetained(context).toOpaque()
            let reserve = server.headReceived(connection)
            if let reason = server.refusal(context, fields: fields, reserve: reserve, connection: connection) {
                context.state = .answered
                return server.reject(reason, context: context, on: connection)
            }
            if reserve != nil { context.closeAfter = true }
            if let length = context.headers["content-length"].flatMap({ Int($0) }), length > server.options.maxBody {
                context.state = .answered
                return server.reject(.bodyTooLarge(limit: server.options.maxBody), context: context, on: connection)
            }
            return .YES
        }
        let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
        if let uploadSize, uploadSize.pointee > 0 {
            let n = uploadSize.pointee
            uploadSize.pointee = 0
            context.received += n
            if context.received > server.options.maxBody {
                // Not buffered; the answer (413) goes out when the body ends. A body going on far past
                // the limit is not worth reading: the connection is closed.
                context.body = []
                context.tooLarge = true
                return context.received > 2 * server.options.maxBody + 65536 ? .NO : .YES
            }
            if let uploadData {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: n) { p in
                    context.body.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
                }
            }
            return .YES
        }
        switch context.state {
        case .receiving:
            server.setReceiving(connection, false)
            if context.tooLarge {
                context.state = .answered
                return server.reject(.bodyTooLarge(limit: server.options.maxBody), context: context, on: connection)
            }
            if server.isStopping {
                context.state = .answered
                return server.reject(.shuttingDown, context: context, on: connection)
            }
            context.state = .handling
            var received = ServerRequest(
                method: context.method, path: context.path, query: context.query, headers: context.headers,
                body: context.body)
            received.clientAddress = server.clientAddress(of: connection)
            let request = received
            context.body = []
            MHD_suspend_connection(connection)
            let key = ObjectIdentifier(context)
            let connectionBits = Int(bitPattern: connection)
            let handler = server.handler
            let executor = server.options.executor
            context.connection = connectionBits
            // Registered before it can finish, so the running table never keeps a finished task.
            server.running.withLock { running in
                let task = Task(executorPreference: executor) {
                    let response = await handler(request)
                    server.running.withLock { _ = $0.removeValue(forKey: key) }
                    context.answer(response)
                }
                running[key] = (task, context)
            }
            return .YES
        case .handling:
            guard let response = context.response.withLock({ $0.response }) else { return .YES }
            context.state = .answered
            return server.queue(response, on: connection, context: context)
        case .answered:
            return .YES
        }
    }

    /// Why the request must be refused before the handler sees it, or nil: a head or target over its
    /// limit, ambiguous framing (RFC 9112 §6.1, §6.3), or a reserve connection asking for more than a
    /// health check. libmicrohttpd has all headers at the first access-handler call but has not acted
    /// on the body yet, so an answer with `Connection: close` here is safe.
    func refusal(_ context: RequestContext, fields: [(String, String)], reserve: Reserve?, connection: OpaquePointer)
        -> ServerRejection?
    {
        let head = herald_mhd_request_head_size(connection)
        if head > options.maxHeadBytes { return .headTooLarge(limit: options.maxHeadBytes) }
        let target =
            context.path.utf8.count + context.query.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 2 }
        if target > options.maxURIBytes { return .uriTooLong(limit: options.maxURIBytes) }
        let lengths = fields.filter { $0.0 == "content-length" }.map(\.1)
        let codings = fields.filter { $0.0 == "transfer-encoding" }.map(\.1)
        if !codings.isEmpty {
            let joined = codings.joined(separator: ", ")
            if codings.count != 1 || joined.trimmingCharacters(in: .whitespaces).lowercased() != "chunked" {
                return .unsupportedTransferEncoding(joined)
            }
            if !lengths.isEmpty {
                return .badFraming("Content-Length and Transfer-Encoding together (RFC 9112 §6.1)")
            }
        }
        if lengths.count > 1 { return .badFraming("more than one Content-Length (RFC 9112 §6.3)") }
        if let reserve,
            !(context.method == "GET" || context.method == "HEAD") || !options.reservePaths.contains(context.path)
        {
            switch reserve {
            case .total: return .tooManyConnections(limit: max(1, options.maxConnections))
            case .client: return .tooManyConnectionsFromClient(limit: max(1, options.maxConnectionsPerClient))
            }
        }
        return nil
    }

    /// Queues the answer for `reason`, closing the connection after it when the reason says so.
    func reject(_ reason: ServerRejection, context: RequestContext, on connection: OpaquePointer) -> MHD_Result {
        if reason.closesConnection { context.closeAfter = true }
        return queue(options.rejection(reason), on: connection, context: context)
    }

    /// The request's headers in the order received, names in lower case, repeats kept apart.
    static func headerFields(_ connection: OpaquePointer) -> [(String, String)] {
        final class Collector {
            var fields: [(String, String)] = []
        }
        let collector = Collector()
        _ = MHD_get_connection_values(
            connection, .HEADER_KIND,
            { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let c = Unmanaged<Collector>.fromOpaque(cls).takeUnretainedValue()
                c.fields.append((String(cString: key).lowercased(), value.map { String(cString: $0) } ?? ""))
                return .YES
            }, Unmanaged.passUnretained(collector).toOpaque())
        return collector.fields
    }

    /// The key/value pairs of one kind (headers or query arguments).
    static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercase: Bool, join: Bool)
        -> [String: String]
    {
        final class Collector {
            var values: [String: String] = [:]
            var lowercase = false
            var join = false
        }
        let collector = Collector()
        collector.lowercase = lowercase
        collector.join = join
        let unmanaged = Unmanaged.passUnretained(collector)
        _ = MHD_get_connection_values(
            connection, kind,
            { cls, _, key, value in
                guard let cls, let key else { return .YES }
                let c = Unmanaged<Collector>.fromOpaque(cls).takeUnretainedValue()
                var name = String(cString: key)
                if c.lowercase { name = name.lowercased() }
                let v = value.map { String(cString: $0) } ?? ""
                if let old = c.values[name] {
                    if c.join { c.values[name] = old + ", " + v }
                } else {
                    c.values[name] = v
                }
                return .YES
            }, unmanaged.toOpaque())
        return collector.values
    }

    /// Queues `response` on `connection` (inside an access-handler call). The answer to a `HEAD`
    /// request has no body at all: a stream is closed unread and an empty answer goes instead
    /// (libmicrohttpd 0.9.75 sends a chunk terminator after the head of a chunked `HEAD` answer).
    func queue(_ response: ServerResponse, on connection: OpaquePointer, context: RequestContext) -> MHD_Result {
        let mhdResponse: OpaquePointer?
        var body = response.body
        if context.method == "HEAD", case .stream(let stream) = body {
            stream.finish()
            stream.markClosed()
            body = .bytes([])
        }
        switch body {
        case .bytes(let bytes):
            mhdResponse = bytes.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(
                    raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let stream):
            stream.attach(connection: connection)
            let key = ObjectIdentifier(stream)
            streams.withLock { $0[key] = stream }
            // A stream answered while stopping is ended at once (stop waits for every stream).
            if isStopping && stream.endsWhenServerStops { stream.finish() }
            let holder = StreamHolder(stream: stream, server: self)
            let cls = Unmanaged.passRetained(holder).toOpaque()
            mhdResponse = MHD_create_response_from_callback(
                UInt64.max, 16 * 1024,
                { cls, _, buffer, max in
                    guard let cls, let buffer else { return -2 }
                    let holder = Unmanaged<StreamHolder>.fromOpaque(cls).takeUnretainedValue()
                    return holder.stream.read(into: buffer, max: max)
                },
                cls,
                { cls in
                    guard let cls else { return }
                    let holder = Unmanaged<StreamHolder>.fromOpaque(cls).takeRetainedValue()
                    holder.stream.markClosed()
                    _ = holder.server?.streams.withLock { $0.removeValue(forKey: ObjectIdentifier(holder.stream)) }
                })
            if mhdResponse == nil {
                Unmanaged<StreamHolder>.fromOpaque(cls).release()
                stream.markClosed()
                _ = streams.withLock { $0.removeValue(forKey: key) }
            }
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers {
            _ = MHD_add_response_header(mhdResponse, name, value)
        }
        if context.closeAfter, response.header("connection") == nil {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(clamping: response.status), mhdResponse)
    }

    final class StreamHolder: @unchecked Sendable {
        let stream: ResponseStream
        weak var server: MicroHTTPServer?
        init(stream: ResponseStream, server: MicroHTTPServer) {
            self.stream = stream
            self.server = server
        }
    }
}
