import ChannelAPI
import Foundation
import HeraldMHD
import Router

/// The event stream, `GET /v1/events` (`text/event-stream`, resumable with `Last-Event-ID`; the
/// token may come as `?token=` for a browser's `EventSource`).
struct EventsAPI: APIResource {
    var routes: [APIRoute] {
        [
            APIRoute("GET", RoutePattern("/v1/events"), access: .token(["read", "events"], query: .accepted)) {
                api, call in try api.eventStream(call.request, token: try call.token)
            }
        ]
    }
}

extension HeraldAPI {
    /// Events written to a stream at a time.
    static let streamPage = 64
    /// A stream's writer waits while more than this many bytes are unread by its client.
    static let streamLowWater = 16 << 10

    /// The shared ``EventLogTail``, made at the first stream.
    func eventLogTail() throws -> EventLogTail {
        try tailStorage.withLock { t in
            if let t { return t }
            let made = try EventLogTail(store: router.store)
            t = made
            return made
        }
    }

    func eventStream(_ request: ServerRequest, token: APIToken) throws -> ServerResponse {
        var filter: [String]?
        var patternFilter: APIToken?
        if let ns = request.query["namespace"] {
            try requireCovers(token, ns)
            filter = [ns]
        } else if let exact = token.exactNamespaces {
            filter = exact
        } else {
            patternFilter = token
        }
        var since: Int64
        if let last = request.header("last-event-id") ?? request.query["since"] {
            guard let n = Int64(last.trimmingCharacters(in: .whitespaces)), n >= 0 else {
                throw APIError.badParameter("since", "must be an event id (a whole number)")
            }
            since = n
        } else {
            since = try router.store.lastEventSequence()
        }
        let headers: [(name: String, value: String)] = [
            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
        ]
        // HEAD: the head only, no stream and no slot.
        if request.method == "HEAD" { return ServerResponse(status: 200, headers: headers) }
        let tail = try eventLogTail()
        try takeSlot(token, stream: true)
        let stream = ResponseStream()
        let key = ObjectIdentifier(stream)
        streams.withLock { $0[key] = stream }
        stream.onClose { [weak self] in
            self?.releaseSlot(token, stream: true)
            _ = self?.streams.withLock { $0.removeValue(forKey: key) }
        }
        let signal = self.signal
        let (keepalive, stall) = settings.withLock { ($0.server.keepalive, $0.server.idleTimeout) }
        Task(executorPreference: executor) { [weak self] in
            // An opening comment makes clients and proxies see the stream at once. A write that is
            // refused (the client is gone, or stopped reading) ends the stream; a client that
            // reconnects with Last-Event-ID misses nothing.
            guard stream.write(Array(": stream\n\n".utf8)) else { return stream.finish() }
            var lastWrite = ContinuousClock.now
            // Until the response is finished, not only closed: a stream finished with more than the
            // low-water mark unread (the server stopping, a test's or fuzzer's handler) made
            // `waitForRoom` return at once, and this loop spun, starting a timer task each turn
            // until the bytes were sent (the HTTP API fuzzer ran out of memory on it).
            while !stream.isFinished {
                if self?.isStopping ?? true {
                    stream.finish()
                    return
                }
                // Backpressure: a client that reads slower than events come keeps them in the shared
                // tail (once for every stream), not in its own buffer (once per stream).
                // A client that reads nothing for idle-timeout is cut (it resumes with Last-Event-ID).
                if stream.bufferedCount > HeraldAPI.streamLowWater {
                    guard await stream.waitForRoom(atMost: HeraldAPI.streamLowWater, timeout: stall) else {
                        return stream.finish()
                    }
                    continue
                }
                let generation = signal.generation
                let page: [EventLogTail.Item]
                do {
                    page = try tail.items(
                        after: since, namespaces: filter, limit: HeraldAPI.streamPage, generation: generation)
                } catch {
                    stream.finish()
                    return
                }
                if let last = page.last { since = last.entry.sequence }
                var bytes: [UInt8] = []
                for item in page where patternFilter?.covers(item.entry.namespace) ?? true {
                    bytes.append(contentsOf: item.frame)
                }
                if !bytes.isEmpty {
                    guard stream.write(bytes) else { return stream.finish() }
                    lastWrite = .now
                }
                if page.count == HeraldAPI.streamPage { continue }
                if ContinuousClock.now - lastWrite >= keepalive {
                    guard stream.write(Array(": keepalive\n\n".utf8)) else { return stream.finish() }
                    lastWrite = .now
                }
                // Woken by this process's router; other processes sharing the store are seen within 1 s.
                let untilKeepalive = keepalive - (ContinuousClock.now - lastWrite)
                await signal.wait(
                    after: generation, timeout: min(.seconds(1), max(.milliseconds(10), untilKeepalive)))
            }
        }
        return ServerResponse(status: 200, headers: headers, body: .stream(stream))
    }
}
